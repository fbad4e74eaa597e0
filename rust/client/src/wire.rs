//! The warm server's protocol, byte for byte as `maguyva.interfaces.client` speaks it: the
//! identity, the NUL-separated request, the descriptors passed with it (SCM_RIGHTS) and the
//! answer line.

use std::ffi::{CString, OsStr};
use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use crate::paths::join;

pub const MAGIC: &[u8] = b"maguyva-daemon-1";
pub const SOCKET: &[u8] = b"daemon.sock";
const MAX_SUN_PATH: usize = 100;

/// `client.identity()`: the interpreter, the package directory and every source and native
/// file under it (path relative to the package, size, mtime in ns), walked in the same order.
pub fn identity(executable: &[u8], package: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(8192);
    out.extend_from_slice(executable);
    out.push(b'\n');
    out.extend_from_slice(package);
    let skip = package.len() + 1;
    let mut stack = vec![package.to_vec()];
    while let Some(top) = stack.pop() {
        let mut entries = Vec::new();
        for entry in fs::read_dir(OsStr::from_bytes(&top))? {
            let entry = entry?;
            entries.push((entry.file_name(), entry));
        }
        entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        for (name, entry) in entries {
            let name = name.as_bytes();
            let path = join(&top, name);
            if entry.file_type()?.is_dir() {
                if name != b"__pycache__" && name != b"data" {
                    stack.push(path);
                }
            } else if [&b".py"[..], b".so", b".pyi"]
                .iter()
                .any(|e| name.ends_with(e))
            {
                let meta = fs::metadata(OsStr::from_bytes(&path))?;
                let mtime_ns =
                    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
                out.push(b'\n');
                out.extend_from_slice(&path[skip..]);
                out.extend_from_slice(format!(":{}:{}", meta.size(), mtime_ns).as_bytes());
            }
        }
    }
    Ok(out)
}

/// `client.encode_request("search", fields, argv, env)`.
pub fn encode_request(fields: &[&[u8]], argv: &[&[u8]], env: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let argc = argv.len().to_string();
    let mut items: Vec<Vec<u8>> = vec![MAGIC.to_vec(), b"search".to_vec()];
    items.extend(fields.iter().map(|f| f.to_vec()));
    items.push(argc.into_bytes());
    items.extend(argv.iter().map(|a| a.to_vec()));
    items.extend(env.iter().map(|(k, v)| [&k[..], b"=", &v[..]].concat()));
    items.join(&b'\0')
}

/// A connection to the server of `index_dir` (a long path through /proc/self/fd, as the
/// Python client does); `None` when nothing listens.
pub fn connect(index_dir: &[u8]) -> Option<UnixStream> {
    let path = join(index_dir, SOCKET);
    if path.len() <= MAX_SUN_PATH {
        return UnixStream::connect(OsStr::from_bytes(&path)).ok();
    }
    let dir = fs::File::open(OsStr::from_bytes(index_dir)).ok()?;
    let via = format!("/proc/self/fd/{}/daemon.sock", dir.as_raw_fd());
    UnixStream::connect(via).ok()
}

/// The pid at the other end, or -1 when it is another user's.
pub fn peer_pid(sock: &UnixStream) -> i64 {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    // SAFETY: getuid cannot fail.
    if rc != 0 || cred.uid != unsafe { libc::getuid() } {
        return -1;
    }
    i64::from(cred.pid)
}

/// Send `data` with `fds` attached to its first bytes.
pub fn send_with_fds(sock: &UnixStream, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let payload = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(payload as u32) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)]; // u64: the alignment cmsghdr needs
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: an all-zero msghdr is a valid empty message; the pointers set below outlive
    // the sendmsg call, and the control buffer holds CMSG_SPACE(payload) bytes.
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(payload as u32) as _;
        std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(cmsg), payload);
        libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut rest = &data[sent as usize..];
    while !rest.is_empty() {
        // SAFETY: `rest` is a valid buffer of its length.
        let n = unsafe {
            libc::send(
                sock.as_raw_fd(),
                rest.as_ptr().cast(),
                rest.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        rest = &rest[n as usize..];
    }
    Ok(())
}

/// What the server answered.
pub enum Answer {
    /// Its exit code, and the output it sent over the socket (empty when it wrote into ours).
    Done(i32, Vec<u8>, Vec<u8>),
    /// It runs other code (or another index directory): its reason.
    Stale(Vec<u8>),
}

/// Read the answer; `Err(reason)` when the connection closed first (the server died).
pub fn read_answer(sock: &mut UnixStream) -> Result<Answer, String> {
    let mut data = Vec::new();
    let mut block = vec![0u8; 1 << 16];
    let newline = loop {
        if let Some(at) = data.iter().position(|&b| b == b'\n') {
            break at;
        }
        match sock.read(&mut block) {
            Ok(0) => return Err("the server closed the connection".into()),
            Ok(n) => data.extend_from_slice(&block[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        }
    };
    let head = String::from_utf8_lossy(&data[..newline]).into_owned();
    let mut body = data[newline + 1..].to_vec();
    if let Some(reason) = head.strip_prefix("stale ") {
        return Ok(Answer::Stale(reason.as_bytes().to_vec()));
    }
    let numbers: Vec<i64> = head
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let [code, n_out, n_err] = numbers[..] else {
        return Err(format!("an answer line not understood: {head:?}"));
    };
    let (n_out, n_err) = (n_out as usize, n_err as usize);
    while body.len() < n_out + n_err {
        match sock.read(&mut block) {
            Ok(0) => return Err("the answer was cut short".into()),
            Ok(n) => body.extend_from_slice(&block[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    let err = body[n_out..n_out + n_err].to_vec();
    body.truncate(n_out);
    Ok(Answer::Done(code as i32, body, err))
}

/// A pipe (read end, write end), both close-on-exec.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned here alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Did the server begin to print (a `+` in the pipe)? Both ends are closed.
pub fn printed(begun: (OwnedFd, OwnedFd)) -> bool {
    let (read_end, write_end) = begun;
    drop(write_end);
    let mut byte = 0u8;
    // SAFETY: a valid descriptor and a one-byte buffer.
    unsafe {
        let fd = read_end.as_raw_fd();
        libc::fcntl(
            fd,
            libc::F_SETFL,
            libc::fcntl(fd, libc::F_GETFL) | libc::O_NONBLOCK,
        );
        libc::read(fd, (&mut byte as *mut u8).cast(), 1) == 1 && byte == b'+'
    }
}

/// Wait (briefly) until a stale server has let go of its lock.
pub fn wait_gone(index_dir: &[u8]) {
    let Ok(path) = CString::new(join(index_dir, b"daemon.lock")) else {
        return;
    };
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        // SAFETY: `fd` is open.
        if unsafe { libc::flock(fd, libc::LOCK_SH | libc::LOCK_NB) } == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: `fd` is open and not used after this.
    unsafe { libc::close(fd) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_nul_separated_as_the_python_client_sends_them() {
        let env = vec![(b"MAGUYVA_X".to_vec(), b"1=2".to_vec())];
        let got = encode_request(&[b"id", b"/ix"], &[b"search", b"q"], &env);
        assert_eq!(
            got,
            b"maguyva-daemon-1\0search\0id\0/ix\x002\0search\0q\0MAGUYVA_X=1=2"
        );
    }
}
