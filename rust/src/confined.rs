//! Reading a repository file for an answer as `maguyva.repo.reader.read_regular` does with a
//! root: nothing but a regular file is opened (`stat` first, then `O_NONBLOCK`, so a FIFO
//! swapped in cannot block), the descriptor is `fstat`ed again, and its real path
//! (`/proc/self/fd`, else `realpath`) must be the root or below it, compared by component.
//! Any refusal or error is `None`: the printer shows such a file's heading without lines, as
//! the Python renderer does.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

fn is_regular(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_file()
}

/// The content of `rel` under `real_root` (a real path), or `None` when it is not a regular
/// file, cannot be read, or resolves outside the root. An absolute `rel` is taken as it is
/// (as `os.path.join` would) and must then resolve inside the root too.
pub fn read_confined(real_root: &Path, rel: &str) -> Option<Vec<u8>> {
    let mut data = Vec::new();
    read_confined_into(real_root, rel, &mut data).then_some(data)
}

/// [`read_confined`] into `data` (cleared first, its capacity reused): false when refused.
pub fn read_confined_into(real_root: &Path, rel: &str, data: &mut Vec<u8>) -> bool {
    data.clear();
    read_checked(real_root, rel, data).is_some()
}

fn read_checked(real_root: &Path, rel: &str, data: &mut Vec<u8>) -> Option<()> {
    if rel.as_bytes().contains(&0) {
        return None;
    }
    let path: PathBuf = real_root.join(rel);
    if !is_regular(&std::fs::metadata(&path).ok()?) {
        return None;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(&path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !is_regular(&meta) {
        return None;
    }
    let real = real_path(&file, &path)?;
    if !real.starts_with(real_root) {
        return None;
    }
    data.reserve(meta.len() as usize + 1);
    if file.read_to_end(data).is_err() {
        data.clear();
        return None;
    }
    Some(())
}

/// The descriptor's real path, as `reader._real_path`: its `/proc/self/fd` link, else the
/// path's `realpath`.
fn real_path(file: &File, path: &Path) -> Option<PathBuf> {
    let link = format!("/proc/self/fd/{}", file.as_raw_fd());
    if let Ok(target) = std::fs::read_link(link) {
        return Some(target);
    }
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: realpath with a NULL buffer allocates the result, which is freed here.
    unsafe {
        let out = libc::realpath(c.as_ptr(), std::ptr::null_mut());
        if out.is_null() {
            return None;
        }
        let real = PathBuf::from(OsStr::from_bytes(std::ffi::CStr::from_ptr(out).to_bytes()));
        libc::free(out.cast());
        Some(real)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_inside_refuses_outside_links_and_specials() {
        let base = std::env::temp_dir().join(format!("maguyva-confined-{}", std::process::id()));
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), b"inside\n").unwrap();
        std::fs::write(base.join("secret.txt"), b"outside\n").unwrap();
        std::os::unix::fs::symlink(base.join("secret.txt"), root.join("out.txt")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/a.txt"), root.join("in.txt")).unwrap();
        std::fs::create_dir_all(base.join("root-old")).unwrap();
        std::fs::write(base.join("root-old/b.txt"), b"sibling\n").unwrap();
        let real = std::fs::canonicalize(&root).unwrap();
        assert_eq!(read_confined(&real, "sub/a.txt").unwrap(), b"inside\n");
        assert_eq!(read_confined(&real, "in.txt").unwrap(), b"inside\n");
        assert_eq!(read_confined(&real, "out.txt"), None);
        assert_eq!(read_confined(&real, "../secret.txt"), None);
        assert_eq!(read_confined(&real, "../root-old/b.txt"), None);
        let abs = base.join("secret.txt");
        assert_eq!(read_confined(&real, abs.to_str().unwrap()), None);
        assert_eq!(read_confined(&real, "sub"), None);
        assert_eq!(read_confined(&real, "missing.txt"), None);
        assert_eq!(read_confined(&real, "a\0b"), None);
        let mut reused = b"left over from another file".to_vec();
        assert!(read_confined_into(&real, "sub/a.txt", &mut reused));
        assert_eq!(reused, b"inside\n");
        assert!(!read_confined_into(&real, "out.txt", &mut reused));
        assert!(reused.is_empty());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
