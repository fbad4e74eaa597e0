//! The best `k` groups of a literal search, chosen in Rust (issue 21): a common literal
//! (`def __init__(self`, `raise ValueError`) matches thousands of chunks in hundreds of files,
//! and a question wants 50 of them. Every group is still built and keyed here (any file may
//! hold the best one), but only the chosen ones cross into Python.
//!
//! The order is that of `TextSearcher._literal` (`python/maguyva/modalities/text/`): definition
//! lines first, then files that are not demoted (tests, vendored, generated), whole-word
//! matches, match density (matches per line of the chunk), shorter paths (in characters),
//! paths, start lines; equal keys keep the order of the search (path, then group), as Python's
//! stable sort does. A group whose definition flag Python must decide (a line that is not
//! ASCII, see [`Group::is_def`]) cannot be placed here: every such group is returned beside
//! the best `k` decided ones, and the best `k` of that union are the best `k` of all (a
//! decided group among the best `k` overall has fewer than `k` decided groups before it).

use std::cmp::Ordering;
use std::sync::{Arc, LazyLock};

use regex::Regex;

use super::groups::{group_file, Group, Grouped, WordBytes};
use super::index::TextIndex;
use super::memo::Lru;
use super::search::FileHits;

/// Definition patterns kept compiled (one per target name; Unicode `\b` and `\s` make each
/// cost ~0.1-1 ms to build).
static DEFINITIONS: LazyLock<Lru<String, Regex>> = LazyLock::new(|| Lru::new(64));

/// The compiled definition pattern `pattern` (remembered, see [`Lru`]).
pub fn definition_regex(pattern: &str) -> Result<Arc<Regex>, regex::Error> {
    DEFINITIONS.get_or_try(&pattern.to_string(), || Regex::new(pattern))
}

/// Below this many files, grouping runs on the calling thread.
const PARALLEL_MIN_FILES: usize = 64;

/// A group's ranking features, borrowed from its file.
#[derive(Debug, Clone, Copy)]
struct Key<'a> {
    not_def: bool,
    demoted: bool,
    not_whole: bool,
    density: f64,
    path_chars: usize,
    path: &'a str,
    start: u32,
    file: usize,
    group: usize,
}

/// Matches per line of the group's span, as Python computes it
/// (`len(columns) / max(1, end - start + 1)`: both integers are exact in an `f64`).
pub fn density(g: &Group<'_>) -> f64 {
    let lines = (i64::from(g.end) - i64::from(g.start) + 1).max(1);
    g.n_columns as f64 / lines as f64
}

fn compare(a: &Key<'_>, b: &Key<'_>) -> Ordering {
    a.not_def
        .cmp(&b.not_def)
        .then(a.demoted.cmp(&b.demoted))
        .then(a.not_whole.cmp(&b.not_whole))
        // Python sorts on `-density`, ascending: the denser first. Densities are positive
        // and finite, where `total_cmp` is the ordinary order.
        .then(b.density.total_cmp(&a.density))
        .then(a.path_chars.cmp(&b.path_chars))
        // UTF-8 byte order is code point order, Python's `str` order.
        .then(a.path.cmp(b.path))
        .then(a.start.cmp(&b.start))
        .then((a.file, a.group).cmp(&(b.file, b.group)))
}

/// What [`top_groups`] chose: `(file, group)` pairs in search order (file, then group
/// within it), indices into the search output's files and into `grouped`.
pub struct Chosen<'a> {
    pub entries: Vec<(usize, usize)>,
    /// Every file's groups (see [`Grouped::owned`] for a chosen one's lines).
    pub grouped: Vec<Grouped<'a>>,
    /// Groups built and ranked (decided and not).
    pub groups: usize,
}

/// Group each file of `files` (see [`group_file`]) and keep the best `k` decided groups and
/// every undecided one. `demoted[doc]` is non-zero for a demoted document (logical ids; the
/// caller checks its length).
pub fn top_groups<'a>(
    index: &'a TextIndex,
    files: &[FileHits],
    definition: Option<&Regex>,
    word: &WordBytes,
    demoted: &[u8],
    k: usize,
) -> Chosen<'a> {
    let group = |f: &FileHits| group_file(f, &index.chunk_table(f.doc), definition, word);
    // A few files are grouped faster than the pool's threads wake (see `search`).
    // The calling thread groups too, and waits for no helper that has not started.
    let helpers = if files.len() < PARALLEL_MIN_FILES {
        0
    } else {
        rayon::current_num_threads().saturating_sub(1).max(1)
    };
    let grouped: Vec<Grouped<'a>> =
        super::together::map(files.len(), helpers, &|i| group(&files[i]));
    let n_groups: usize = grouped.iter().map(|g| g.groups.len()).sum();
    let mut keys: Vec<Key<'_>> = Vec::with_capacity(n_groups);
    let mut undecided: Vec<(usize, usize)> = Vec::new();
    for (file, (f, groups)) in files.iter().zip(&grouped).enumerate() {
        let path = index.path(f.doc);
        let path_chars = path.chars().count();
        let is_demoted = demoted.get(f.doc as usize).is_some_and(|&b| b != 0);
        for (group, g) in groups.groups.iter().enumerate() {
            let Some(is_def) = g.is_def else {
                undecided.push((file, group));
                continue;
            };
            keys.push(Key {
                not_def: !is_def,
                demoted: is_demoted,
                not_whole: !g.whole,
                density: density(g),
                path_chars,
                path,
                start: g.start,
                file,
                group,
            });
        }
    }
    if keys.len() > k {
        if k == 0 {
            keys.clear();
        } else {
            keys.select_nth_unstable_by(k - 1, compare);
            keys.truncate(k);
        }
    }
    let mut entries: Vec<(usize, usize)> = keys.iter().map(|key| (key.file, key.group)).collect();
    entries.extend(undecided);
    entries.sort_unstable();
    Chosen {
        entries,
        grouped,
        groups: n_groups,
    }
}

/// The entries [`top_groups`] chose, in ranked order (the order the text modality's sort
/// gives them), or `None` when one of them is undecided (Python's `re` decides those).
pub fn ranked_entries(
    index: &TextIndex,
    files: &[FileHits],
    chosen: &Chosen<'_>,
    demoted: &[u8],
) -> Option<Vec<(usize, usize)>> {
    let mut keys: Vec<Key<'_>> = Vec::with_capacity(chosen.entries.len());
    for &(file, group) in &chosen.entries {
        let g = &chosen.grouped[file].groups[group];
        keys.push(key_of(
            index,
            &files[file],
            g,
            g.is_def?,
            demoted,
            (file, group),
        ));
    }
    keys.sort_unstable_by(compare);
    Some(keys.iter().map(|key| (key.file, key.group)).collect())
}

/// The ranking key of group `g` (at `(file, group)`) of the file `f`, its flag `is_def`.
fn key_of<'a>(
    index: &'a TextIndex,
    f: &FileHits,
    g: &Group<'_>,
    is_def: bool,
    demoted: &[u8],
    (file, group): (usize, usize),
) -> Key<'a> {
    let path = index.path(f.doc);
    Key {
        not_def: !is_def,
        demoted: demoted.get(f.doc as usize).is_some_and(|&b| b != 0),
        not_whole: !g.whole,
        density: density(g),
        path_chars: path.chars().count(),
        path,
        start: g.start,
        file,
        group,
    }
}

/// Every group of `files` in ranked order (decided groups only), for tests: [`top_groups`]
/// must equal its prefix.
#[cfg(test)]
fn full_order(
    index: &TextIndex,
    files: &[FileHits],
    definition: Option<&Regex>,
    word: &WordBytes,
    demoted: &[u8],
) -> Vec<(usize, usize)> {
    let mut keys = Vec::new();
    let grouped: Vec<Grouped<'_>> = files
        .iter()
        .map(|f| group_file(f, index.chunks(f.doc).as_slice(), definition, word))
        .collect();
    for (file, (f, groups)) in files.iter().zip(&grouped).enumerate() {
        for (group, g) in groups.groups.iter().enumerate() {
            if let Some(is_def) = g.is_def {
                keys.push(key_of(index, f, g, is_def, demoted, (file, group)));
            }
        }
    }
    // A stable sort on the key without the search-order tie-break (Python's `sort`).
    keys.sort_by(|a, b| {
        compare(
            &Key {
                file: 0,
                group: 0,
                ..*a
            },
            &Key {
                file: 0,
                group: 0,
                ..*b
            },
        )
    });
    keys.iter().map(|k| (k.file, k.group)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trigram::build::{build, BuildInput, BuildOptions, ChunkSpan};
    use crate::trigram::search::{search, Case, SearchSpec};
    use proptest::prelude::*;

    fn word() -> WordBytes {
        let mut w = [false; 256];
        for b in 0..=255u8 {
            w[b as usize] = b.is_ascii_alphanumeric() || b == b'_';
        }
        WordBytes(w)
    }

    fn scratch(tag: &str) -> std::path::PathBuf {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("maguyva-rank-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        dir
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Over files of few distinct lines (so that keys tie often, down to the start line
        /// of nested chunks), with chunks of random spans, random demotion and a definition
        /// pattern: the chosen decided groups are, in the order Python then sorts them, the
        /// prefix of the full ranking, for every `k`; every undecided group is returned.
        #[test]
        fn top_k_is_the_prefix_of_the_full_ranking(
            docs in proptest::collection::vec(
                proptest::collection::vec(0usize..5, 1..30), 1..12),
            spans in proptest::collection::vec((0u32..30, 0u32..8), 0..6),
            demoted in proptest::collection::vec(any::<bool>(), 12),
            k in 0usize..40,
        ) {
            const LINES: [&str; 5] = ["x = ab", "def ab(): pass", "abab ab", "zz", "é ab"];
            let root = scratch("root");
            let out = scratch("out");
            let mut inputs: Vec<BuildInput> = docs
                .iter()
                .enumerate()
                .map(|(i, lines)| {
                    let text: String = lines.iter().map(|&l| format!("{}\n", LINES[l])).collect();
                    // Paths of two lengths, so that the length and the path both decide.
                    let path = if i % 3 == 0 { format!("d_f{i}.py") } else { format!("f{i}.py") };
                    std::fs::write(root.join(&path), &text).expect("write");
                    BuildInput {
                        path,
                        chunks: spans
                            .iter()
                            .enumerate()
                            .map(|(c, &(s, len))| ChunkSpan {
                                start_line: s + 1,
                                end_line: s + 1 + len,
                                id: format!("c{i}-{c}"),
                            })
                            .collect(),
                    }
                })
                .collect();
            inputs.sort_by(|a, b| a.path.cmp(&b.path));
            build(&root, &inputs, &out, &BuildOptions::default()).expect("build");
            let index = TextIndex::open(&out).expect("open");
            let flags: Vec<u8> = (0..index.n_docs()).map(|d| u8::from(demoted[d as usize % 12])).collect();
            let spec = SearchSpec {
                pattern: "ab".into(),
                regex: false,
                case: Case::Sensitive,
                whole_word: false,
                path_glob: None,
                max_lines: usize::MAX,
                max_files: usize::MAX,
                max_lines_per_file: 200,
                count_all: false,
            };
            let files = search(&index, &spec).expect("search").files;
            let re = Regex::new(r"^[\s\x1c-\x1f]*def\b[^\n]*?\bab\b").expect("re");
            let full = full_order(&index, &files, Some(&re), &word(), &flags);
            let chosen = top_groups(&index, &files, Some(&re), &word(), &flags, k);
            let mut decided: Vec<(usize, usize)> = Vec::new();
            let mut undecided = 0;
            let grouped: Vec<Grouped<'_>> = files
                .iter()
                .map(|f| group_file(f, index.chunks(f.doc).as_slice(), Some(&re), &word()))
                .collect();
            prop_assert_eq!(&chosen.grouped, &grouped);
            for &(file, at) in &chosen.entries {
                if grouped[file].groups[at].is_def.is_some() { decided.push((file, at)); } else { undecided += 1; }
            }
            let all_undecided: usize = grouped.iter().flat_map(|g| &g.groups).filter(|g| g.is_def.is_none()).count();
            prop_assert_eq!(undecided, all_undecided);
            prop_assert!(chosen.entries.windows(2).all(|w| w[0].0 <= w[1].0));
            // Sorted as Python sorts them (stable, on the key without the tie-break).
            let rank_of = |x: &(usize, usize)| full.iter().position(|y| y == x).expect("ranked");
            decided.sort_by_key(rank_of);
            prop_assert_eq!(&decided[..], &full[..k.min(full.len())]);
            let _ = std::fs::remove_dir_all(&root);
            let _ = std::fs::remove_dir_all(&out);
        }
    }
}
