//! The native `maguyva` command (issue 21): a `maguyva search` whose repository has a warm
//! server is asked of that server without starting Python, in the Python client's protocol
//! (`maguyva.interfaces.client`), byte for byte; the server writes the answer into this
//! process's stdout and stderr, passed with the question. Everything else, and every case
//! this client does not handle (no server yet, opted out, a configuration that moves the
//! index, a stale or dying server, an unusual locale or Python environment), is handed to the
//! Python client by exec'ing the interpreter the package was installed with: that client starts
//! and replaces servers, or answers in process, as it always did.
//!
//! Which interpreter and package are "this installation's" is read from `maguyva.paths`
//! beside the binary, written when it is installed (`python -m maguyva.interfaces.native`):
//! the identity sent to the server is computed from them as the Python client computes its own.

mod paths;
mod wire;

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

const LOCATOR_MAGIC: &str = "maguyva-native-client 1";
/// What the console script ran (`maguyva.interfaces.client:main`); the arguments follow.
const PYTHON_MAIN: &str =
    "import sys; from maguyva.interfaces.client import main; sys.exit(main())";
const OFF_VALUES: [&str; 4] = ["0", "off", "no", "false"];
const UNAVAILABLE_S: u64 = 3600;
/// Besides MAGUYVA_*, what the in-process path reads while it answers (`FORWARDED_ENV`).
const FORWARDED_ENV: [&str; 5] = ["NO_COLOR", "TERM", "COLUMNS", "HOME", "XDG_CONFIG_HOME"];
/// Variables that change which package the interpreter imports or how it encodes its
/// output: with any of them set, the Python client decides.
const PYTHON_ENV: [&str; 8] = [
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONNOUSERSITE",
    "PYTHONPLATLIBDIR",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONCOERCECLOCALE",
];

fn trace(message: &str) {
    if std::env::var_os("MAGUYVA_DAEMON_TRACE").is_some_and(|v| !v.is_empty()) {
        let _ = writeln!(std::io::stderr(), "maguyva: daemon: {message}");
    }
}

fn off(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| OFF_VALUES.contains(&v.trim().to_lowercase().as_str()))
}

/// The installation's interpreter and package directory (`maguyva.paths` beside the binary).
fn locate() -> Result<(Vec<u8>, Vec<u8>), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let mut locator = exe.into_os_string().into_vec();
    locator.extend_from_slice(b".paths");
    let text = std::fs::read(OsStr::from_bytes(&locator)).map_err(|e| {
        format!(
            "{}: {e} (install the client with `make setup`)",
            String::from_utf8_lossy(&locator)
        )
    })?;
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    match lines[..] {
        [magic, executable, package, ..]
            if magic == LOCATOR_MAGIC.as_bytes()
                && !executable.is_empty()
                && !package.is_empty() =>
        {
            Ok((executable.to_vec(), package.to_vec()))
        }
        _ => Err(format!(
            "{} is not a locator of this client",
            String::from_utf8_lossy(&locator)
        )),
    }
}

/// The stdout encoding and error handler CPython picks in this locale (`config_get_locale_encoding`,
/// `config_get_stdio_errors`); `None` for a locale whose codec name only Python knows.
fn stdout_encoding() -> Option<(&'static str, &'static str)> {
    // SAFETY: called before any other thread exists; the returned strings are copied at once.
    let (name, codeset) = unsafe {
        libc::setlocale(libc::LC_CTYPE, c"".as_ptr());
        let name = libc::setlocale(libc::LC_CTYPE, std::ptr::null());
        if name.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(name).to_bytes().to_vec();
        let codeset = std::ffi::CStr::from_ptr(libc::nl_langinfo(libc::CODESET))
            .to_bytes()
            .to_vec();
        (name, codeset)
    };
    if name == b"C" || name == b"POSIX" {
        return Some(("utf-8", "surrogateescape")); // coerced to C.UTF-8, UTF-8 mode
    }
    if !codeset.eq_ignore_ascii_case(b"UTF-8") && !codeset.eq_ignore_ascii_case(b"UTF8") {
        return None;
    }
    let coercion_target = [&b"C.UTF-8"[..], b"C.utf8", b"UTF-8"].contains(&&name[..]);
    Some((
        "utf-8",
        if coercion_target {
            "surrogateescape"
        } else {
            "strict"
        },
    ))
}

fn unavailable(index_dir: &[u8]) -> bool {
    let Ok(meta) = std::fs::metadata(OsStr::from_bytes(&paths::join(
        index_dir,
        b"daemon.unavailable",
    ))) else {
        return false;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    now - meta.mtime() < UNAVAILABLE_S as i64
}

fn writable(path: &[u8]) -> bool {
    let Ok(path) = std::ffi::CString::new(path) else {
        return false;
    };
    // SAFETY: a NUL-terminated path.
    unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
}

/// The request for `argv` (from `search` on), as `client._request` builds it.
fn request(
    argv: &[OsString],
    executable: &[u8],
    package: &[u8],
) -> Result<(Vec<u8>, Vec<u8>), String> {
    let cwd = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
    let cwd = cwd.into_os_string().into_vec();
    let index_dir = paths::index_dir_of(&argv[1..], &cwd)
        .ok_or("the index directory needs the Python client")?;
    if !std::path::Path::new(OsStr::from_bytes(&paths::join(
        &index_dir,
        b"manifest.json",
    )))
    .is_file()
    {
        return Err("no index here".into());
    }
    if unavailable(&index_dir) || !writable(&index_dir) {
        return Err("no server can listen here".into());
    }
    let (encoding, errors) = stdout_encoding().ok_or("a locale whose encoding Python names")?;
    let ident = wire::identity(executable, package).map_err(|e| format!("identity: {e}"))?;
    // SAFETY: isatty only inspects the descriptor.
    let tty: &[u8] = if unsafe { libc::isatty(1) } == 1 {
        b"1"
    } else {
        b"0"
    };
    let fields: [&[u8]; 6] = [
        &ident,
        &index_dir,
        &cwd,
        tty,
        encoding.as_bytes(),
        errors.as_bytes(),
    ];
    let args: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
    let env: Vec<(Vec<u8>, Vec<u8>)> = std::env::vars_os()
        .filter(|(k, _)| {
            k.as_bytes().starts_with(b"MAGUYVA_")
                || FORWARDED_ENV.iter().any(|f| k.as_bytes() == f.as_bytes())
        })
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .collect();
    Ok((wire::encode_request(&fields, &args, &env), index_dir))
}

/// Descriptors 1 and 2 for the server to write into, unless opted out or closed.
fn stdio_fds() -> Option<[i32; 2]> {
    if off("MAGUYVA_DAEMON_FDS") {
        return None;
    }
    let open = |fd: i32| {
        // SAFETY: fstat writes into a zeroed stat of the right size.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        unsafe { libc::fstat(fd, &mut st) == 0 }
    };
    (open(1) && open(2)).then_some([1, 2])
}

/// Ask the warm server: `Ok(exit code)`, or `Err(why)` when the Python client should.
fn ask(argv: &[OsString], executable: &[u8], package: &[u8]) -> Result<i32, String> {
    let (request, index_dir) = request(argv, executable, package)?;
    let mut sock = wire::connect(&index_dir).ok_or("no server listens")?;
    let fds = stdio_fds();
    let begun = match fds {
        Some(_) => Some(wire::pipe().map_err(|e| e.to_string())?),
        None => None,
    };
    let sent = match (fds, &begun) {
        (Some([out, err]), Some((_, write_end))) => {
            wire::send_with_fds(&sock, &request, &[out, err, write_end.as_raw_fd()])
        }
        _ => sock.write_all(&request),
    };
    let answer = sent
        .and_then(|()| sock.shutdown(std::net::Shutdown::Write))
        .map_err(|e| e.to_string())
        .and_then(|()| {
            trace(&format!("question sent to pid {}", wire::peer_pid(&sock)));
            wire::read_answer(&mut sock)
        });
    drop(sock);
    let printed = begun.is_some_and(wire::printed);
    match answer {
        Err(reason) if printed => {
            let log = String::from_utf8_lossy(&paths::join(&index_dir, b"daemon.log")).into_owned();
            let _ = writeln!(
                std::io::stderr(),
                "maguyva: error: the server died while answering ({reason}; see {log})"
            );
            Ok(2)
        }
        Err(reason) => Err(format!("{reason}; the Python client starts another server")),
        Ok(wire::Answer::Stale(reason)) => {
            wire::wait_gone(&index_dir);
            Err(format!(
                "stale server ({}); the Python client starts another",
                String::from_utf8_lossy(&reason)
            ))
        }
        Ok(wire::Answer::Done(code, out, err)) => {
            if fds.is_some() {
                trace("the server wrote into our stdout");
            } else {
                trace("the answer came over the socket");
                let _ = std::io::stderr().write_all(&err);
                let _ = std::io::stdout()
                    .write_all(&out)
                    .and_then(|()| std::io::stdout().flush());
            }
            Ok(code)
        }
    }
}

fn handled(argv: &[OsString]) -> Result<(), &'static str> {
    if argv.get(1).map(|a| a.as_bytes()) != Some(b"search") {
        return Err("not a search");
    }
    if off("MAGUYVA_DAEMON") || argv.iter().any(|a| a == "--no-daemon") {
        return Err("opted out of the server");
    }
    if PYTHON_ENV
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
    {
        return Err("a PYTHON* variable is set");
    }
    Ok(())
}

fn main() {
    let argv: Vec<OsString> = std::env::args_os().collect();
    let (executable, package) = match locate() {
        Ok(found) => found,
        Err(reason) => {
            let _ = writeln!(std::io::stderr(), "maguyva: error: {reason}");
            std::process::exit(2);
        }
    };
    let why = match handled(&argv) {
        Ok(()) => match ask(&argv[1..], &executable, &package) {
            Ok(code) => std::process::exit(code),
            Err(why) => why,
        },
        Err(why) => why.to_string(),
    };
    trace(&format!(
        "native client: {why}; handing over to the Python client"
    ));
    let python = OsStr::from_bytes(&executable);
    // `-P`: the working directory (the user's repository) is not put on the module path;
    // `-c` rather than `-m maguyva`, which imports runpy (~5 ms).
    let err = Command::new(python)
        .arg0(python)
        .args(["-P", "-c", PYTHON_MAIN])
        .args(&argv[1..])
        .exec();
    let _ = writeln!(
        std::io::stderr(),
        "maguyva: error: cannot run {}: {err}",
        String::from_utf8_lossy(&executable)
    );
    std::process::exit(2);
}
