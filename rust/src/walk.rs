//! The repository walker shared by every modality, built on the `ignore` crate (ripgrep's).
//!
//! It honours `.gitignore` at every level, `.git/info/exclude`, the global excludes file and
//! `.maguyvaignore`; skips hidden files and (by default) symlinks; and reads every candidate
//! once to refuse binary files (a NUL byte) and files whose distinct-trigram count says they
//! are data rather than code (minified bundles, base64 blobs). Every refusal is reported with
//! its reason so that `maguyva status` can count them.
//!
//! Two rules hold whatever the configuration: a file whose real path is outside the root is
//! never selected (with `follow_symlinks` a link may point anywhere: it is followed only
//! while it stays inside), and only regular files are read, through `read_regular`, which
//! opens without blocking and checks the opened file's type, so a FIFO, socket or device
//! (or a file swapped for one after the walk) cannot hang the walk or the build.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use globset::{Glob, GlobSet, GlobSetBuilder};
use ignore::{WalkBuilder, WalkState};

use crate::error::{CoreError, CoreResult};

/// The default size cap: larger files are skipped unless an allow-list glob matches them.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 20;
/// Zoekt's limit on distinct trigrams per document; above it a file is treated as data.
pub const DEFAULT_MAX_TRIGRAMS: usize = 20_000;

/// How to walk. Built once, then used read-only by the walker threads.
#[derive(Debug, Clone)]
pub struct WalkConfig {
    pub max_file_bytes: u64,
    /// Globs (relative paths, `/` separators) of files exempt from the size cap.
    pub allow_large: Vec<String>,
    pub follow_symlinks: bool,
    pub max_trigrams: usize,
    pub threads: usize,
}

impl Default for WalkConfig {
    fn default() -> Self {
        Self {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            allow_large: Vec::new(),
            follow_symlinks: false,
            max_trigrams: DEFAULT_MAX_TRIGRAMS,
            threads: 2,
        }
    }
}

/// Why a file was not selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    TooLarge,
    Binary,
    TooManyTrigrams,
    Unreadable,
    NotRegular,
    SymlinkLoop,
    OutsideRoot,
}

impl SkipReason {
    /// The stable name shown by `maguyva status` and stored in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::TooLarge => "too_large",
            SkipReason::Binary => "binary",
            SkipReason::TooManyTrigrams => "too_many_trigrams",
            SkipReason::Unreadable => "unreadable",
            SkipReason::NotRegular => "not_regular",
            SkipReason::SymlinkLoop => "symlink_loop",
            SkipReason::OutsideRoot => "outside_root",
        }
    }
}

/// One selected file. `path` is relative to the root with `/` separators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkedFile {
    pub path: String,
    pub size: u64,
    pub mtime_ns: i64,
}

/// The walk's answer: selected files sorted by path, and skipped ones with their reason.
#[derive(Debug, Default)]
pub struct WalkOutput {
    pub files: Vec<WalkedFile>,
    pub skipped: Vec<(String, SkipReason)>,
}

/// Classify file content: `None` when indexable, or the reason it is not.
pub fn classify_content(bytes: &[u8], max_trigrams: usize) -> Option<SkipReason> {
    if memchr::memchr(0, bytes).is_some() {
        return Some(SkipReason::Binary);
    }
    if bytes.len() > max_trigrams.saturating_add(2)
        && estimate_distinct_trigrams(bytes) > max_trigrams
    {
        return Some(SkipReason::TooManyTrigrams);
    }
    None
}

/// Estimate the number of distinct (case-folded) trigrams by linear counting over a 2^17-bit
/// map: cheap (one pass, a 16 KiB map) and within a few percent up to ~200,000 distinct.
pub fn estimate_distinct_trigrams(bytes: &[u8]) -> usize {
    const BITS: usize = 1 << 17;
    let mut map = vec![0u64; BITS / 64];
    if bytes.len() >= 3 {
        let mut t = crate::trigram::ngram::pack(0, bytes[0], bytes[1]);
        for &b in &bytes[2..] {
            t = ((t << 8) | u32::from(b.to_ascii_lowercase())) & 0x00FF_FFFF;
            let h = (t.wrapping_mul(0x9E37_79B1) >> 15) as usize & (BITS - 1);
            map[h / 64] |= 1 << (h % 64);
        }
    }
    let set: u32 = map.iter().map(|w| w.count_ones()).sum();
    let zero = (BITS as f64 - f64::from(set)).max(1.0) / BITS as f64;
    (-(BITS as f64) * zero.ln()) as usize
}

fn build_allow(globs: &[String]) -> CoreResult<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for g in globs {
        let glob = Glob::new(g)
            .map_err(|e| CoreError::InvalidArgument(format!("bad allow_large glob {g:?}: {e}")))?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|e| CoreError::InvalidArgument(format!("bad allow_large globs: {e}")))
}

fn relative(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Read a file only if it is a regular file: opened with `O_NONBLOCK` (a FIFO cannot block
/// the open) and, unless `follow`, `O_NOFOLLOW`; the descriptor's type is checked before any
/// read. `Err(NotRegular)` for a special file, `Err(Unreadable)` for any other failure.
pub fn read_regular(path: &Path, follow: bool) -> Result<Vec<u8>, SkipReason> {
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !follow {
        flags |= libc::O_NOFOLLOW;
    }
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(SkipReason::NotRegular),
        Err(_) => return Err(SkipReason::Unreadable),
    };
    let meta = file.metadata().map_err(|_| SkipReason::Unreadable)?;
    if !meta.is_file() {
        return Err(SkipReason::NotRegular);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.read_to_end(&mut bytes)
        .map_err(|_| SkipReason::Unreadable)?;
    Ok(bytes)
}

/// Does `path` (under the canonical `root`) really lie inside it, links resolved?
/// `Err(OutsideRoot)` when it resolves elsewhere, `Err(Unreadable)` when it does not resolve.
pub fn confine_real(root: &Path, path: &Path) -> Result<(), SkipReason> {
    match path.canonicalize() {
        Ok(real) if real.starts_with(root) => Ok(()),
        Ok(_) => Err(SkipReason::OutsideRoot),
        Err(_) => Err(SkipReason::Unreadable),
    }
}

type Decided = Option<Result<WalkedFile, (String, SkipReason)>>;

/// Decide one walked entry: select it, skip it with a reason, or ignore it (directories);
/// and whether to descend (a followed directory link that leaves the root is not entered).
fn visit(
    root: &Path,
    entry: &ignore::DirEntry,
    cfg: &WalkConfig,
    allow: &GlobSet,
) -> (Decided, WalkState) {
    let Some(ft) = entry.file_type() else {
        return (None, WalkState::Continue);
    };
    let rel = relative(root, entry.path());
    if ft.is_dir() {
        if cfg.follow_symlinks && entry.path_is_symlink() {
            if let Err(reason) = confine_real(root, entry.path()) {
                return (Some(Err((rel, reason))), WalkState::Skip);
            }
        }
        return (None, WalkState::Continue);
    }
    (
        Some(visit_file(root, entry, ft, rel, cfg, allow)),
        WalkState::Continue,
    )
}

fn visit_file(
    root: &Path,
    entry: &ignore::DirEntry,
    ft: std::fs::FileType,
    rel: String,
    cfg: &WalkConfig,
    allow: &GlobSet,
) -> Result<WalkedFile, (String, SkipReason)> {
    if ft.is_symlink() || !ft.is_file() {
        // A link is only reached as itself when links are not followed: never indexed.
        return Err((rel, SkipReason::NotRegular));
    }
    if cfg.follow_symlinks {
        if let Err(reason) = confine_real(root, entry.path()) {
            return Err((rel, reason));
        }
    }
    let meta = match std::fs::metadata(entry.path()) {
        Ok(m) => m,
        Err(_) => return Err((rel, SkipReason::Unreadable)),
    };
    if !meta.is_file() {
        return Err((rel, SkipReason::NotRegular));
    }
    if meta.len() > cfg.max_file_bytes && !allow.is_match(&rel) {
        return Err((rel, SkipReason::TooLarge));
    }
    let bytes = match read_regular(entry.path(), cfg.follow_symlinks) {
        Ok(b) => b,
        Err(reason) => return Err((rel, reason)),
    };
    if let Some(reason) = classify_content(&bytes, cfg.max_trigrams) {
        return Err((rel, reason));
    }
    Ok(WalkedFile {
        path: rel,
        size: bytes.len() as u64,
        mtime_ns: mtime_ns(&meta),
    })
}

/// Walk `root` and select the files to index.
pub fn walk(root: &Path, cfg: &WalkConfig) -> CoreResult<WalkOutput> {
    let root: PathBuf = root.canonicalize().map_err(|source| CoreError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    if !root.is_dir() {
        return Err(CoreError::InvalidArgument(format!(
            "{} is not a directory",
            root.display()
        )));
    }
    let allow = build_allow(&cfg.allow_large)?;
    let mut builder = WalkBuilder::new(&root);
    builder
        .hidden(true)
        .parents(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .ignore(false)
        .follow_links(cfg.follow_symlinks)
        .threads(cfg.threads.max(1))
        .add_custom_ignore_filename(".maguyvaignore")
        .filter_entry(|entry| !is_never_walked(entry));
    let out = Mutex::new(WalkOutput::default());
    builder.build_parallel().run(|| {
        let out = &out;
        let allow = &allow;
        let root = &root;
        Box::new(move |entry| {
            let (decided, state) = match entry {
                Ok(entry) => visit(root, &entry, cfg, allow),
                Err(err) => (loop_or_unreadable(root, &err), WalkState::Continue),
            };
            if let Some(decided) = decided {
                let mut guard = match out.lock() {
                    Ok(g) => g,
                    Err(poisoned) => poisoned.into_inner(),
                };
                match decided {
                    Ok(file) => guard.files.push(file),
                    Err(skip) => guard.skipped.push(skip),
                }
            }
            state
        })
    });
    let mut out = out.into_inner().unwrap_or_else(|p| p.into_inner());
    out.files.sort_by(|a, b| a.path.cmp(&b.path));
    out.skipped.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Directories no rule brings in: git's own store and Maguyva's index. Both are hidden, but
/// a whitelist (`!/*/` in `.maguyvaignore`) outranks the hidden filter, and an index that
/// walked into itself would index its own files, more of them at every run.
fn is_never_walked(entry: &ignore::DirEntry) -> bool {
    entry.depth() > 0
        && entry.file_type().is_some_and(|t| t.is_dir())
        && matches!(entry.file_name().to_str(), Some(".git" | ".maguyva"))
}

/// A walk error becomes a skipped entry (a loop when links are followed, else unreadable).
fn loop_or_unreadable(root: &Path, err: &ignore::Error) -> Decided {
    fn find(err: &ignore::Error) -> (Option<PathBuf>, bool) {
        match err {
            ignore::Error::WithPath { path, err } => (Some(path.clone()), find(err).1),
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
                find(err)
            }
            ignore::Error::Loop { child, .. } => (Some(child.clone()), true),
            ignore::Error::Partial(errs) => errs.first().map_or((None, false), find),
            _ => (None, false),
        }
    }
    let (path, is_loop) = find(err);
    let rel = path.map_or_else(|| err.to_string(), |p| relative(root, &p));
    let reason = if is_loop {
        SkipReason::SymlinkLoop
    } else {
        SkipReason::Unreadable
    };
    Some(Err((rel, reason)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_byte_is_binary() {
        assert_eq!(classify_content(b"abc\0def", 10), Some(SkipReason::Binary));
        assert_eq!(classify_content(b"plain text", 10), None);
    }

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("maguyva-walk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        dir.canonicalize().expect("canonical")
    }

    #[test]
    fn read_regular_refuses_a_fifo_without_blocking() {
        let dir = scratch_dir("fifo");
        let fifo = dir.join("pipe.py");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf-8")).expect("cstring");
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(read_regular(&fifo, true), Err(SkipReason::NotRegular));
        std::fs::write(dir.join("a.py"), b"x = 1\n").expect("write");
        assert_eq!(
            read_regular(&dir.join("a.py"), false).as_deref(),
            Ok(&b"x = 1\n"[..])
        );
        std::os::unix::fs::symlink(dir.join("a.py"), dir.join("l.py")).expect("symlink");
        assert_eq!(
            read_regular(&dir.join("l.py"), false),
            Err(SkipReason::NotRegular)
        );
        let out = walk(&dir, &WalkConfig::default()).expect("walk");
        let files: Vec<_> = out.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(files, ["a.py"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_whitelist_never_brings_in_the_index_or_git() {
        let root = scratch_dir("whitelist");
        for dir in [".maguyva", ".git", "src", "debian"] {
            std::fs::create_dir_all(root.join(dir)).expect("mkdir");
            std::fs::write(root.join(dir).join("m.py"), b"m = 1\n").expect("write");
        }
        std::fs::write(root.join(".gitignore"), b"/*\n!/debian/\n").expect("write");
        let walked = |root: &Path| -> Vec<String> {
            let out = walk(root, &WalkConfig::default()).expect("walk");
            out.files.into_iter().map(|f| f.path).collect()
        };
        assert_eq!(walked(&root), ["debian/m.py"]);
        std::fs::write(root.join(".maguyvaignore"), b"!/*/\n").expect("write");
        assert_eq!(walked(&root), ["debian/m.py", "src/m.py"]);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn followed_links_never_leave_the_root() {
        let base = scratch_dir("links");
        let (root, outside) = (base.join("repo"), base.join("outside"));
        std::fs::create_dir_all(&root).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("leak.py"), b"LEAK = 1\n").expect("write");
        std::fs::write(root.join("a.py"), b"a = 1\n").expect("write");
        std::os::unix::fs::symlink(outside.join("leak.py"), root.join("leak.py")).expect("ln");
        std::os::unix::fs::symlink(&outside, root.join("outdir")).expect("ln");
        std::os::unix::fs::symlink("a.py", root.join("alias.py")).expect("ln");
        let cfg = WalkConfig {
            follow_symlinks: true,
            ..WalkConfig::default()
        };
        let out = walk(&root, &cfg).expect("walk");
        let files: Vec<_> = out.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(files, ["a.py", "alias.py"]);
        let outside_root: Vec<_> = out
            .skipped
            .iter()
            .filter(|(_, r)| *r == SkipReason::OutsideRoot)
            .map(|(p, _)| p.as_str())
            .collect();
        assert_eq!(outside_root, ["leak.py", "outdir"]);
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn estimate_tracks_exact_count() {
        let mut x: u64 = 0x1234_5678;
        let bytes: Vec<u8> = (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b'!' + (x % 90) as u8
            })
            .collect();
        let mut exact: Vec<u32> = bytes
            .windows(3)
            .map(|w| crate::trigram::ngram::pack(w[0], w[1], w[2]))
            .collect();
        exact.sort_unstable();
        exact.dedup();
        let est = estimate_distinct_trigrams(&bytes) as f64;
        let err = (est - exact.len() as f64).abs() / exact.len() as f64;
        assert!(err < 0.05, "estimate {est} vs exact {}", exact.len());
    }
}
