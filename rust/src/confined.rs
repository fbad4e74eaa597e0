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

/// `(size, mtime in ns)` of each of `rels` joined to `root` (`os.path.join`: an absolute
/// `rel` is taken as it is), not following a final symbolic link, as
/// `maguyva.repo.changes._stat`; `None` where it cannot be stat'ed (gone, a NUL byte). One
/// call for every result of an answer: a common literal shows hundreds of files, and a Python
/// `os.stat` per file (with its call and object overhead) was a visible share of it (issue 21).
pub fn lstat_states(root: &Path, rels: &[String]) -> Vec<Option<(u64, i64)>> {
    use std::os::unix::fs::MetadataExt;
    rels.iter()
        .map(|rel| {
            if rel.as_bytes().contains(&0) {
                return None;
            }
            let meta = std::fs::symlink_metadata(root.join(rel)).ok()?;
            Some((
                meta.size(),
                meta.mtime().saturating_mul(1_000_000_000) + meta.mtime_nsec(),
            ))
        })
        .collect()
}

/// For each root-relative `rel`, whether it is spelled plainly (no empty, `.` or `..`
/// component) and every component of it under `below` (the real root followed by `/`)
/// exists and is no symbolic link, as `maguyva.repo.paths._no_link_below` decides: its real
/// path is then the root joined with it. Each directory is `lstat`ed once per call. False
/// says only "not decided here": the caller resolves such a path with `realpath`.
pub fn plain_paths(below: &str, rels: &[String]) -> Vec<bool> {
    let mut known: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
    rels.iter()
        .map(|rel| {
            if rel
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..")
                || rel.as_bytes().contains(&0)
            {
                return false;
            }
            let mut at = String::with_capacity(below.len() + rel.len());
            at.push_str(below);
            for (i, part) in rel.split('/').enumerate() {
                if i > 0 {
                    at.push('/');
                }
                at.push_str(part);
                let plain = match known.get(&at) {
                    Some(&plain) => plain,
                    None => {
                        let plain = std::fs::symlink_metadata(&at)
                            .is_ok_and(|m| !m.file_type().is_symlink());
                        known.insert(at.clone(), plain);
                        plain
                    }
                };
                if !plain {
                    return false;
                }
            }
            true
        })
        .collect()
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
    #[test]
    fn plain_paths_and_states_as_the_python_checks() {
        let base = std::env::temp_dir().join(format!("maguyva-plain-{}", std::process::id()));
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), b"inside\n").unwrap();
        std::os::unix::fs::symlink(root.join("sub"), root.join("link")).unwrap();
        let below = format!("{}/", std::fs::canonicalize(&root).unwrap().display());
        let rels: Vec<String> = [
            "sub/a.txt",
            "link/a.txt",
            "sub/../sub/a.txt",
            "sub//a.txt",
            "./sub/a.txt",
            "missing.txt",
            "sub/a.txt",
            "a\0b",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        assert_eq!(
            plain_paths(&below, &rels),
            [true, false, false, false, false, false, true, false]
        );
        let states = lstat_states(&root, &rels);
        let meta = std::fs::symlink_metadata(root.join("sub/a.txt")).unwrap();
        use std::os::unix::fs::MetadataExt;
        let want = (7, meta.mtime() * 1_000_000_000 + meta.mtime_nsec());
        assert_eq!(states[0], Some(want));
        assert_eq!(states[1], Some(want)); // the link's target: only a final link is not followed
        assert_eq!(states[5], None);
        assert_eq!(states[7], None);
        // a final link is not followed: its size is its target's length
        let link = lstat_states(&root, &["link".to_string()])[0].unwrap();
        assert_eq!(link.0, root.join("sub").as_os_str().len() as u64);
        std::fs::remove_dir_all(&base).unwrap();
    }
}
