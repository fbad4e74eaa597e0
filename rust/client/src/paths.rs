//! Which index directory a search reads, found exactly as `maguyva.interfaces.client` finds
//! it (`index_dir_of`); `None` wherever that module would need `maguyva.config` or the full
//! parser: the Python client decides then.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;

const PATH_OPTIONS: [&[u8]; 2] = [b"--root", b"--index-dir"];

/// The values of `--root` and `--index-dir`, when given.
type PathOptions = (Option<Vec<u8>>, Option<Vec<u8>>);

/// `--root` and `--index-dir` of a search's arguments (the last of each wins); `None` when
/// they cannot be read without argparse (an abbreviated option, `--`).
fn path_options(argv: &[OsString]) -> Option<PathOptions> {
    let (mut root, mut index_dir) = (None, None);
    let mut i = 0;
    while i < argv.len() {
        let arg = argv[i].as_bytes();
        if arg == b"--" {
            return None;
        }
        let (name, value) = match arg.iter().position(|&b| b == b'=') {
            Some(at) => (&arg[..at], Some(arg[at + 1..].to_vec())),
            None => (arg, None),
        };
        if PATH_OPTIONS.contains(&name) {
            let value = match value {
                Some(value) => value,
                None => {
                    i += 1;
                    argv.get(i)?.as_bytes().to_vec()
                }
            };
            if name == b"--root" {
                root = Some(value);
            } else {
                index_dir = Some(value);
            }
        } else if name.starts_with(b"--")
            && name.len() > 2
            && PATH_OPTIONS.iter().any(|o| o.starts_with(name))
        {
            return None; // argparse would expand an abbreviation
        }
        i += 1;
    }
    Some((root, index_dir))
}

/// `os.path.join(a, b)` for POSIX paths.
pub fn join(a: &[u8], b: &[u8]) -> Vec<u8> {
    if b.starts_with(b"/") || a.is_empty() {
        return b.to_vec();
    }
    let mut out = a.to_vec();
    if !out.ends_with(b"/") {
        out.push(b'/');
    }
    out.extend_from_slice(b);
    out
}

/// `posixpath.normpath`: `.`, `..` and repeated slashes resolved lexically; two leading
/// slashes (and only two) are kept.
pub fn normpath(path: &[u8]) -> Vec<u8> {
    if path.is_empty() {
        return b".".to_vec();
    }
    let initial = if path.starts_with(b"//") && !path.starts_with(b"///") {
        2
    } else if path.starts_with(b"/") {
        1
    } else {
        0
    };
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in path.split(|&b| b == b'/') {
        if part.is_empty() || part == b"." {
            continue;
        }
        if part != b".." || (initial == 0 && parts.is_empty()) || parts.last() == Some(&&b".."[..])
        {
            parts.push(part);
        } else if !parts.is_empty() {
            parts.pop();
        }
    }
    let mut out = vec![b'/'; initial];
    out.extend_from_slice(&parts.join(&b'/'));
    if out.is_empty() {
        out.push(b'.');
    }
    out
}

fn realpath(path: &[u8]) -> Option<Vec<u8>> {
    std::fs::canonicalize(OsStr::from_bytes(path))
        .ok()
        .map(|p| p.into_os_string().into_vec())
}

fn is_file(path: &[u8]) -> bool {
    Path::new(OsStr::from_bytes(path)).is_file()
}

fn dirname(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(0) => b"/",
        Some(at) => &path[..at],
        None => b"",
    }
}

/// The nearest ancestor of `start` holding an index or a `.maguyva.toml`, else `start`.
fn find_root(start: &[u8]) -> Option<Vec<u8>> {
    let start = realpath(start)?;
    let mut candidate = start.clone();
    loop {
        if is_file(&join(&candidate, b".maguyva/manifest.json"))
            || is_file(&join(&candidate, b".maguyva.toml"))
        {
            return Some(candidate);
        }
        let parent = dirname(&candidate).to_vec();
        if parent == candidate {
            return Some(start);
        }
        candidate = parent;
    }
}

fn env_bytes(name: &str) -> Option<Vec<u8>> {
    std::env::var_os(name)
        .map(OsString::into_vec)
        .filter(|v| !v.is_empty())
}

/// Could a configuration file set `index_dir`? `None` when the user's configuration
/// directory cannot be named without the password database.
fn configures_index_dir(root: &[u8]) -> Option<bool> {
    let base = match env_bytes("XDG_CONFIG_HOME") {
        Some(base) => base,
        None => join(&env_bytes("HOME")?, b".config"),
    };
    let paths = [
        join(root, b".maguyva.toml"),
        join(root, b"pyproject.toml"),
        join(&base, b"maguyva/config.toml"),
    ];
    Some(paths.iter().any(|path| {
        std::fs::read(OsStr::from_bytes(path))
            .map(|text| text.windows(9).any(|w| w == b"index_dir"))
            .unwrap_or(false)
    }))
}

/// The index directory a search with these arguments (after `search`) reads from `cwd`.
pub fn index_dir_of(argv: &[OsString], cwd: &[u8]) -> Option<Vec<u8>> {
    let (root_option, index_dir_option) = path_options(argv)?;
    let root = match root_option {
        Some(root) => realpath(&join(cwd, &root))?,
        None => find_root(cwd)?,
    };
    if let Some(index_dir) = index_dir_option.filter(|v| !v.is_empty()) {
        return Some(normpath(&join(cwd, &index_dir)));
    }
    if env_bytes("MAGUYVA_INDEX_DIR").is_some() || configures_index_dir(&root)? {
        return None; // `maguyva.config` decides
    }
    Some(join(&root, b".maguyva"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(items: &[&str]) -> Vec<OsString> {
        items.iter().map(OsString::from).collect()
    }

    #[test]
    fn normpath_is_posixpaths() {
        for (path, want) in [
            ("/a/b/../c/./d", "/a/c/d"),
            ("//a//b", "//a/b"),
            ("///a", "/a"),
            ("a/../..", ".."),
            ("/..", "/"),
            ("", "."),
            ("a/b/", "a/b"),
        ] {
            assert_eq!(normpath(path.as_bytes()), want.as_bytes(), "{path}");
        }
    }

    #[test]
    fn options_as_the_python_client_reads_them() {
        let got = path_options(&args(&["x", "--root", "r", "--index-dir=i"])).unwrap();
        assert_eq!(got, (Some(b"r".to_vec()), Some(b"i".to_vec())));
        assert!(path_options(&args(&["x", "--ro", "r"])).is_none());
        assert!(path_options(&args(&["x", "--", "r"])).is_none());
        assert!(path_options(&args(&["x", "--root"])).is_none());
        assert_eq!(path_options(&args(&["x", "--json"])).unwrap(), (None, None));
    }

    #[test]
    fn join_as_os_path_join() {
        assert_eq!(join(b"/a", b"/b"), b"/b");
        assert_eq!(join(b"/a/", b"b"), b"/a/b");
        assert_eq!(join(b"/a", b""), b"/a/");
    }
}
