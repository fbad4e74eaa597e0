//! Weighted Reciprocal Rank Fusion with the centrality boost, path demotion and
//! best-chunk-per-file.
//!
//! For an item at 0-based `rank` in a list with weight `w`, the contribution is
//! `w / (k + rank + 1)`. Contributions are summed over every list that found the item, the sum
//! is multiplied by `boost = min(1 + 0.3 ln(1 + c), 1.5)` where `c` is the item's scaled
//! centrality, and by [`DEMOTION_FACTOR`] when its path is vendored, built, archived, minified
//! or generated. Only the best item of each path survives. Raw retriever scores never enter:
//! only ranks do.

use std::collections::HashMap;
use std::hash::BuildHasher;

use rustc_hash::FxHashMap;

use crate::error::{CoreError, CoreResult};

/// Multiplier applied to results under vendor/build/archive/generated paths.
pub const DEMOTION_FACTOR: f64 = 0.5;
/// Upper bound of the centrality boost; keeps a hub from burying a relevant leaf.
pub const BOOST_CAP: f64 = 1.5;

/// One retriever's ranked list: items best first. Keys and paths are borrowed, so the
/// binding layer can hand over Python's own string buffers without copying them.
#[derive(Debug, Clone)]
pub struct RankedList<'a> {
    pub weight: f64,
    /// `(key, path)` pairs; the key identifies a chunk, the path its file.
    pub items: Vec<(&'a str, &'a str)>,
}

/// How one list contributed to a fused item.
#[derive(Debug, Clone, PartialEq)]
pub struct Contribution {
    /// Index of the list in the input.
    pub list: usize,
    /// 0-based position in that list.
    pub rank: usize,
    /// `weight / (k + rank + 1)`, before the boost.
    pub contribution: f64,
}

/// A fused result with everything needed to explain its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused<'a> {
    pub key: &'a str,
    pub path: &'a str,
    /// Final score: `sum(contributions) * boost * (DEMOTION_FACTOR if demoted)`.
    pub score: f64,
    pub boost: f64,
    pub demoted: bool,
    pub contributions: Vec<Contribution>,
    /// Keys of other chunks of the same file that were folded into this result.
    pub folded: Vec<&'a str>,
}

/// The centrality boost `min(1 + 0.3 ln(1 + c), 1.5)`; negative or NaN centrality counts as 0.
pub fn boost(centrality: f64) -> f64 {
    let c = if centrality.is_finite() && centrality > 0.0 {
        centrality
    } else {
        0.0
    };
    (1.0 + 0.3 * c.ln_1p()).min(BOOST_CAP)
}

const DEMOTED_DIRS: &[&str] = &[
    "vendor",
    "vendors",
    "third_party",
    "third-party",
    "thirdparty",
    "node_modules",
    "build",
    "dist",
    "target",
    ".git",
    "site-packages",
    "__pycache__",
    "bower_components",
];

const DEMOTED_SUFFIXES: &[&str] = &[
    ".min.js",
    ".min.css",
    ".map",
    ".zip",
    ".tar",
    ".gz",
    ".tgz",
    ".bz2",
    ".xz",
    ".jar",
    ".whl",
    ".lock",
    "_pb2.py",
    "_pb2_grpc.py",
    ".pb.go",
    ".pb.cc",
    ".pb.h",
    ".g.dart",
    ".designer.cs",
];

/// True when a path is vendored, built, archived, minified or generated.
pub fn is_demoted_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let mut components = lower.split(['/', '\\']).peekable();
    while let Some(part) = components.next() {
        if components.peek().is_none() {
            // The file name itself.
            return DEMOTED_SUFFIXES.iter().any(|s| part.ends_with(s))
                || part.contains(".generated.")
                || part.contains("_generated.");
        }
        if DEMOTED_DIRS.contains(&part) {
            return true;
        }
    }
    false
}

/// Fuse ranked lists. `centrality` maps an item key (or its path, as a fallback) to its scaled
/// centrality. Returns at most `limit` items, best first; ties are broken by path then key so
/// the order is deterministic.
pub fn fuse<'a, S: BuildHasher>(
    lists: &[RankedList<'a>],
    centrality: &HashMap<&str, f64, S>,
    k: f64,
    limit: usize,
) -> Vec<Fused<'a>> {
    fuse_with(lists, centrality, k, limit, Evidence::Chunk)
}

/// What a list's agreement is counted on before the best chunk per file is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// A result's score is its own chunk's contributions (SPEC.md's formula).
    Chunk,
    /// A result's score is its file's: each list contributes once per file, at the rank of
    /// its best-ranked chunk of that file, so two retrievers that find different chunks of one
    /// file agree on it. The file is still shown by its best chunk, with that chunk's boost.
    File,
}

/// [`fuse`] with the evidence chosen: [`Evidence::File`] scores each file by the best rank
/// every list gave any of its chunks (the contributions reported are those file ranks).
pub fn fuse_with<'a, 'c, S: BuildHasher>(
    lists: &[RankedList<'a>],
    centrality: &HashMap<&'c str, f64, S>,
    k: f64,
    limit: usize,
    evidence: Evidence,
) -> Vec<Fused<'a>> {
    let expected: usize = lists.iter().map(|l| l.items.len()).sum();
    // Fx hashing: keys are short, trusted strings from our own retrievers.
    let mut index: FxHashMap<&str, usize> =
        FxHashMap::with_capacity_and_hasher(expected, Default::default());
    let mut fused: Vec<Fused<'a>> = Vec::with_capacity(expected);
    for (list_no, list) in lists.iter().enumerate() {
        for (rank, &(key, path)) in list.items.iter().enumerate() {
            let contribution = list.weight / (k + rank as f64 + 1.0);
            let slot = *index.entry(key).or_insert_with(|| {
                fused.push(Fused {
                    key,
                    path,
                    score: 0.0,
                    boost: 1.0,
                    demoted: false,
                    contributions: Vec::new(),
                    folded: Vec::new(),
                });
                fused.len() - 1
            });
            let contributions = &mut fused[slot].contributions;
            // A retriever that repeats a key only counts at its best (first) rank.
            if contributions.last().is_some_and(|c| c.list == list_no) {
                continue;
            }
            contributions.push(Contribution {
                list: list_no,
                rank,
                contribution,
            });
        }
    }
    let mut demoted_paths: FxHashMap<&str, bool> = FxHashMap::default();
    for item in &mut fused {
        let raw: f64 = item.contributions.iter().map(|c| c.contribution).sum();
        let c = centrality
            .get(item.key)
            .or_else(|| centrality.get(item.path))
            .copied()
            .unwrap_or(0.0);
        item.boost = boost(c);
        item.demoted = *demoted_paths
            .entry(item.path)
            .or_insert_with(|| is_demoted_path(item.path));
        let demotion = if item.demoted { DEMOTION_FACTOR } else { 1.0 };
        item.score = raw * item.boost * demotion;
    }
    // Best chunk per file: reduce to one item per path first, then order only those heads
    // (a few hundred files instead of thousands of chunks) and keep the top `limit`.
    let mut head_of_path: FxHashMap<&str, usize> =
        FxHashMap::with_capacity_and_hasher(fused.len(), Default::default());
    for (i, item) in fused.iter().enumerate() {
        head_of_path
            .entry(item.path)
            .and_modify(|head| {
                if better(item, &fused[*head]).is_lt() {
                    *head = i;
                }
            })
            .or_insert(i);
    }
    let mut heads: Vec<usize> = head_of_path.values().copied().collect();
    if evidence == Evidence::File {
        for (path, contributions) in file_contributions(lists, k) {
            if let Some(&head) = head_of_path.get(path) {
                let item = &mut fused[head];
                let raw: f64 = contributions.iter().map(|c| c.contribution).sum();
                let demotion = if item.demoted { DEMOTION_FACTOR } else { 1.0 };
                item.score = raw * item.boost * demotion;
                item.contributions = contributions;
            }
        }
    }
    let by_rank = |a: &usize, b: &usize| better(&fused[*a], &fused[*b]);
    if heads.len() > limit {
        heads.select_nth_unstable_by(limit, by_rank);
        heads.truncate(limit);
    }
    heads.sort_unstable_by(by_rank);
    // The other chunks of each kept file, best first, are reported as folded into it.
    let slot_of_path: FxHashMap<&str, usize> = heads
        .iter()
        .enumerate()
        .map(|(slot, &i)| (fused[i].path, slot))
        .collect();
    let mut folded: Vec<Vec<usize>> = vec![Vec::new(); heads.len()];
    for (i, item) in fused.iter().enumerate() {
        if let Some(&slot) = slot_of_path.get(item.path) {
            if heads[slot] != i {
                folded[slot].push(i);
            }
        }
    }
    heads
        .iter()
        .zip(folded)
        .map(|(&head, mut others)| {
            others.sort_unstable_by(by_rank);
            let mut item = fused[head].clone();
            item.folded = others.into_iter().map(|i| fused[i].key).collect();
            item
        })
        .collect()
}

/// Per file, each list's first (best-ranked) entry of any of its chunks, as a contribution.
fn file_contributions<'a>(
    lists: &[RankedList<'a>],
    k: f64,
) -> FxHashMap<&'a str, Vec<Contribution>> {
    let mut by_path: FxHashMap<&'a str, Vec<Contribution>> = FxHashMap::default();
    for (list_no, list) in lists.iter().enumerate() {
        for (rank, &(_, path)) in list.items.iter().enumerate() {
            let contributions = by_path.entry(path).or_default();
            if contributions.last().is_some_and(|c| c.list == list_no) {
                continue;
            }
            contributions.push(Contribution {
                list: list_no,
                rank,
                contribution: list.weight / (k + rank as f64 + 1.0),
            });
        }
    }
    by_path
}

/// Result order: higher score first, then path, then key (deterministic on ties).
fn better(a: &Fused<'_>, b: &Fused<'_>) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.path.cmp(b.path))
        .then_with(|| a.key.cmp(b.key))
}

/// One retriever's ranked list as two parallel arrays, best first: entry `rank` found item
/// `items[rank]` in file `paths[rank]`. Items and files are numbers into [`IdInput::keys`]
/// and [`IdInput::paths`], so a list crosses the binding as two int64 arrays, not as tuples.
#[derive(Debug, Clone, Copy)]
pub struct RankedIds<'a> {
    pub weight: f64,
    pub items: &'a [i64],
    pub paths: &'a [i64],
}

/// Everything [`fuse_ids`] reads besides the lists. The names only order ties and decide
/// demotion; the centrality slices are indexed by item and by file (NaN: no value; an empty
/// slice: none at all); `demote` marks extra files to demote (generated by content), by file.
#[derive(Debug, Clone, Copy)]
pub struct IdInput<'a> {
    pub lists: &'a [RankedIds<'a>],
    pub keys: &'a [&'a str],
    pub paths: &'a [&'a str],
    pub key_centrality: &'a [f64],
    pub path_centrality: &'a [f64],
    pub demote: &'a [bool],
}

/// A fused result by number: [`Fused`] with items and files as numbers, plus every position
/// of every list that found a chunk of the same file (`members`, as `(list, rank)`), which is
/// what the caller needs to gather a file's matching lines without a pass over all hits.
#[derive(Debug, Clone, PartialEq)]
pub struct FusedId {
    pub item: usize,
    pub path: usize,
    pub score: f64,
    pub boost: f64,
    pub demoted: bool,
    pub contributions: Vec<Contribution>,
    /// Other items of the same file, best first.
    pub folded: Vec<usize>,
    /// `(list, rank)` of every entry whose file is this result's, in list then rank order.
    pub members: Vec<(usize, usize)>,
}

fn check_ids(what: &str, ids: &[i64], bound: usize) -> CoreResult<()> {
    match ids.iter().find(|&&i| i < 0 || i as u64 >= bound as u64) {
        Some(bad) => Err(CoreError::InvalidArgument(format!(
            "{what} {bad} out of range (0 .. {bound})"
        ))),
        None => Ok(()),
    }
}

fn check_input(input: &IdInput<'_>) -> CoreResult<()> {
    let (n_keys, n_paths) = (input.keys.len(), input.paths.len());
    for (no, list) in input.lists.iter().enumerate() {
        if list.items.len() != list.paths.len() {
            return Err(CoreError::InvalidArgument(format!(
                "list {no}: {} items but {} paths",
                list.items.len(),
                list.paths.len()
            )));
        }
        check_ids("item", list.items, n_keys)?;
        check_ids("path", list.paths, n_paths)?;
    }
    for (what, len, bound) in [
        ("key_centrality", input.key_centrality.len(), n_keys),
        ("path_centrality", input.path_centrality.len(), n_paths),
        ("demote", input.demote.len(), n_paths),
    ] {
        if len != 0 && len != bound {
            return Err(CoreError::InvalidArgument(format!(
                "{what} has {len} entries, expected 0 or {bound}"
            )));
        }
    }
    Ok(())
}

/// A number's value in an optional per-number table (NaN or no table: none).
fn lookup(table: &[f64], i: usize) -> Option<f64> {
    table.get(i).copied().filter(|v| !v.is_nan())
}

/// [`fuse`] over numbered items: the same formula, ties, demotion and best chunk per file,
/// with arrays in place of string pairs and hash maps. An item's file is the one of its first
/// entry; its centrality is its own, else its file's, else 0. Errors on a number out of range
/// or a table of the wrong length.
pub fn fuse_ids(input: &IdInput<'_>, k: f64, limit: usize) -> CoreResult<Vec<FusedId>> {
    check_input(input)?;
    const NONE: usize = usize::MAX;
    let n_keys = input.keys.len();
    // Per item: its file, summed contributions, last list that counted it.
    let mut path_of = vec![NONE; n_keys];
    let mut raw = vec![0.0f64; n_keys];
    let mut last_list = vec![NONE; n_keys];
    let mut seen: Vec<usize> = Vec::new();
    for (list_no, list) in input.lists.iter().enumerate() {
        for (rank, (&item, &path)) in list.items.iter().zip(list.paths).enumerate() {
            let item = item as usize;
            if last_list[item] == list_no {
                continue; // a retriever that repeats a key only counts at its first rank
            }
            if path_of[item] == NONE {
                path_of[item] = path as usize;
                seen.push(item);
            }
            last_list[item] = list_no;
            raw[item] += list.weight / (k + rank as f64 + 1.0);
        }
    }
    // Demotion once per file: 0 unknown, 1 kept, 2 demoted.
    let mut demoted_path = vec![0u8; input.paths.len()];
    let mut score = vec![0.0f64; n_keys];
    let mut boosts = vec![1.0f64; n_keys];
    for &item in &seen {
        let path = path_of[item];
        let c = lookup(input.key_centrality, item)
            .or_else(|| lookup(input.path_centrality, path))
            .unwrap_or(0.0);
        boosts[item] = boost(c);
        if demoted_path[path] == 0 {
            let extra = input.demote.get(path).copied().unwrap_or(false);
            demoted_path[path] = if extra || is_demoted_path(input.paths[path]) {
                2
            } else {
                1
            };
        }
        let demotion = if demoted_path[path] == 2 {
            DEMOTION_FACTOR
        } else {
            1.0
        };
        score[item] = raw[item] * boosts[item] * demotion;
    }
    let better = |a: &usize, b: &usize| {
        score[*b]
            .total_cmp(&score[*a])
            .then_with(|| input.paths[path_of[*a]].cmp(input.paths[path_of[*b]]))
            .then_with(|| input.keys[*a].cmp(input.keys[*b]))
    };
    // Best chunk per file, then the top `limit` files.
    let mut head_of_path = vec![NONE; input.paths.len()];
    for &item in &seen {
        let head = &mut head_of_path[path_of[item]];
        if *head == NONE || better(&item, head).is_lt() {
            *head = item;
        }
    }
    let mut heads: Vec<usize> = head_of_path
        .iter()
        .copied()
        .filter(|&h| h != NONE)
        .collect();
    if heads.len() > limit {
        heads.select_nth_unstable_by(limit, better);
        heads.truncate(limit);
    }
    heads.sort_unstable_by(better);
    let mut slot_of_path = vec![NONE; input.paths.len()];
    let mut out: Vec<FusedId> = heads
        .iter()
        .enumerate()
        .map(|(slot, &item)| {
            slot_of_path[path_of[item]] = slot;
            FusedId {
                item,
                path: path_of[item],
                score: score[item],
                boost: boosts[item],
                demoted: demoted_path[path_of[item]] == 2,
                contributions: Vec::new(),
                folded: Vec::new(),
                members: Vec::new(),
            }
        })
        .collect();
    for &item in &seen {
        let slot = slot_of_path[path_of[item]];
        if slot != NONE && out[slot].item != item {
            out[slot].folded.push(item);
        }
    }
    for fused in &mut out {
        fused.folded.sort_unstable_by(better);
    }
    // Contributions (first rank per list) and members (every entry of the file), in one pass.
    let mut counted = vec![NONE; n_keys];
    for (list_no, list) in input.lists.iter().enumerate() {
        for (rank, (&item, &path)) in list.items.iter().zip(list.paths).enumerate() {
            let (item, path) = (item as usize, path as usize);
            if let Some(&slot) = slot_of_path.get(path).filter(|&&s| s != NONE) {
                out[slot].members.push((list_no, rank));
            }
            let slot = slot_of_path[path_of[item]];
            if slot != NONE && out[slot].item == item && counted[item] != list_no {
                counted[item] = list_no;
                out[slot].contributions.push(Contribution {
                    list: list_no,
                    rank,
                    contribution: list.weight / (k + rank as f64 + 1.0),
                });
            }
        }
    }
    Ok(out)
}

/// Cut concatenated `items` / `paths` into one [`RankedIds`] per entry of `lengths`, weighted
/// by `weights`. Errors when the lengths do not add up or a weight is missing.
pub fn split_lists<'a>(
    items: &'a [i64],
    paths: &'a [i64],
    lengths: &[i64],
    weights: &[f64],
) -> CoreResult<Vec<RankedIds<'a>>> {
    if lengths.len() != weights.len() {
        return Err(CoreError::InvalidArgument(format!(
            "{} lists but {} weights",
            lengths.len(),
            weights.len()
        )));
    }
    if items.len() != paths.len() {
        return Err(CoreError::InvalidArgument(format!(
            "{} items but {} paths",
            items.len(),
            paths.len()
        )));
    }
    let mut start = 0usize;
    let mut lists = Vec::with_capacity(lengths.len());
    for (&len, &weight) in lengths.iter().zip(weights) {
        let end = usize::try_from(len)
            .ok()
            .and_then(|n| start.checked_add(n))
            .filter(|&end| end <= items.len())
            .ok_or_else(|| {
                CoreError::InvalidArgument(format!(
                    "list lengths {lengths:?} do not fit {} items",
                    items.len()
                ))
            })?;
        lists.push(RankedIds {
            weight,
            items: &items[start..end],
            paths: &paths[start..end],
        });
        start = end;
    }
    if start != items.len() {
        return Err(CoreError::InvalidArgument(format!(
            "list lengths add up to {start}, not to the {} items",
            items.len()
        )));
    }
    Ok(lists)
}

/// Number names by first appearance: each name's number, and for each number the position of
/// its first appearance. What turns retrievers' chunk keys and paths into the int arrays of
/// [`fuse_ids`] at hash-map speed (a dict per hit in Python costs more than the fusion).
pub fn number<'a>(names: &[&'a str]) -> (Vec<i64>, Vec<usize>) {
    let mut seen: FxHashMap<&'a str, i64> =
        FxHashMap::with_capacity_and_hasher(names.len(), Default::default());
    let mut first = Vec::new();
    let ids = names
        .iter()
        .enumerate()
        .map(|(at, &name)| {
            *seen.entry(name).or_insert_with(|| {
                first.push(at);
                first.len() as i64 - 1
            })
        })
        .collect();
    (ids, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list<'a>(weight: f64, items: &[(&'a str, &'a str)]) -> RankedList<'a> {
        RankedList {
            weight,
            items: items.to_vec(),
        }
    }

    #[test]
    fn boost_is_one_at_zero_and_capped() {
        assert_eq!(boost(0.0), 1.0);
        assert_eq!(boost(-3.0), 1.0);
        assert_eq!(boost(f64::NAN), 1.0);
        assert!((boost(1.0) - (1.0 + 0.3 * 2f64.ln())).abs() < 1e-12);
        assert_eq!(boost(1e9), BOOST_CAP);
    }

    #[test]
    fn agreement_beats_a_single_list() {
        let lists = vec![
            list(0.5, &[("a", "a.py"), ("b", "b.py")]),
            list(0.5, &[("b", "b.py"), ("c", "c.py")]),
        ];
        let out = fuse(&lists, &HashMap::<&str, f64>::new(), 60.0, 10);
        assert_eq!(out[0].key, "b");
        let expected = 0.5 / 62.0 + 0.5 / 61.0;
        assert!((out[0].score - expected).abs() < 1e-12);
        assert_eq!(out[0].contributions.len(), 2);
    }

    #[test]
    fn file_evidence_counts_agreement_on_different_chunks_of_a_file() {
        // Semantic finds chunk a1 of a.rs first, text finds a2 of the same file; b.rs has one
        // chunk both found lower. By chunk, b wins (agreement on one chunk); by file, a does.
        let lists = vec![
            list(0.5, &[("a1", "a.rs"), ("b", "b.rs")]),
            list(0.5, &[("a2", "a.rs"), ("b", "b.rs")]),
        ];
        let none = HashMap::<&str, f64>::new();
        let by_chunk = fuse_with(&lists, &none, 10.0, 10, Evidence::Chunk);
        assert_eq!(by_chunk[0].key, "b");
        let by_file = fuse_with(&lists, &none, 10.0, 10, Evidence::File);
        assert_eq!(by_file[0].key, "a1");
        assert_eq!(by_file[0].folded, vec!["a2"]);
        assert!((by_file[0].score - 2.0 * 0.5 / 11.0).abs() < 1e-12);
        let ranks: Vec<(usize, usize)> = by_file[0]
            .contributions
            .iter()
            .map(|c| (c.list, c.rank))
            .collect();
        assert_eq!(ranks, vec![(0, 0), (1, 0)]);
        assert!((by_file[1].score - 2.0 * 0.5 / 12.0).abs() < 1e-12);
    }

    #[test]
    fn file_evidence_counts_a_list_once_per_file_and_keeps_the_boost_of_the_shown_chunk() {
        let lists = vec![list(1.0, &[("a1", "a.rs"), ("a2", "a.rs"), ("b", "b.rs")])];
        let mut c = HashMap::new();
        c.insert("a2", 5.0);
        let out = fuse_with(&lists, &c, 10.0, 10, Evidence::File);
        // a2's boost makes it a.rs's best chunk; the file's rank is a1's (0), counted once.
        assert_eq!(out[0].key, "a2");
        assert_eq!(out[0].contributions.len(), 1);
        assert!((out[0].score - boost(5.0) / 11.0).abs() < 1e-12);
        assert_eq!(out[1].key, "b");
        assert!((out[1].score - 1.0 / 13.0).abs() < 1e-12);
    }

    #[test]
    fn demoted_paths_fall_behind() {
        let lists = vec![list(1.0, &[("v", "vendor/x.py"), ("s", "src/x.py")])];
        let out = fuse(&lists, &HashMap::<&str, f64>::new(), 60.0, 10);
        assert_eq!(out[0].key, "s");
        assert!(out[1].demoted);
    }

    #[test]
    fn one_result_per_file_with_folded_keys() {
        let lists = vec![list(1.0, &[("a1", "a.py"), ("a2", "a.py"), ("b", "b.py")])];
        let out = fuse(&lists, &HashMap::<&str, f64>::new(), 60.0, 10);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].folded, vec!["a2"]);
    }

    #[test]
    fn centrality_boost_applies_by_key_then_path() {
        let lists = vec![list(1.0, &[("a", "a.py"), ("b", "b.py")])];
        let mut c = HashMap::new();
        c.insert("b.py", 5.0);
        let out = fuse(&lists, &c, 60.0, 10);
        assert_eq!(out[0].key, "b");
        assert!((out[0].boost - boost(5.0)).abs() < 1e-12);
    }

    #[test]
    fn demotion_rules() {
        for p in [
            "vendor/a.go",
            "a/node_modules/x.js",
            "build/x.py",
            "x.min.js",
            "proto/a_pb2.py",
            "a/target/debug/x.rs",
            "x.generated.ts",
        ] {
            assert!(is_demoted_path(p), "{p}");
        }
        for p in ["src/build.rs", "src/x.py", "distance.py", "vendoring/x.py"] {
            assert!(!is_demoted_path(p), "{p}");
        }
    }

    #[test]
    fn limit_and_empty_input() {
        assert!(fuse(&[], &HashMap::<&str, f64>::new(), 60.0, 10).is_empty());
        let lists = vec![list(1.0, &[("a", "a"), ("b", "b"), ("c", "c")])];
        assert_eq!(fuse(&lists, &HashMap::<&str, f64>::new(), 60.0, 2).len(), 2);
    }

    /// Number the keys and paths of string lists, as the Python side does.
    struct Numbered {
        keys: Vec<&'static str>,
        paths: Vec<&'static str>,
        items: Vec<Vec<i64>>,
        path_ids: Vec<Vec<i64>>,
        weights: Vec<f64>,
    }

    fn numbered(lists: &[(f64, &[(&'static str, &'static str)])]) -> Numbered {
        let (mut keys, mut paths) = (Vec::new(), Vec::new());
        let number =
            |names: &mut Vec<&'static str>, name| match names.iter().position(|&n| n == name) {
                Some(i) => i as i64,
                None => {
                    names.push(name);
                    names.len() as i64 - 1
                }
            };
        let (mut items, mut path_ids, mut weights) = (Vec::new(), Vec::new(), Vec::new());
        for &(weight, entries) in lists {
            weights.push(weight);
            items.push(entries.iter().map(|&(k, _)| number(&mut keys, k)).collect());
            path_ids.push(
                entries
                    .iter()
                    .map(|&(_, p)| number(&mut paths, p))
                    .collect(),
            );
        }
        Numbered {
            keys,
            paths,
            items,
            path_ids,
            weights,
        }
    }

    fn fuse_numbered(
        n: &Numbered,
        key_c: &[f64],
        path_c: &[f64],
        demote: &[bool],
        limit: usize,
    ) -> CoreResult<Vec<FusedId>> {
        let lists: Vec<RankedIds<'_>> = (0..n.items.len())
            .map(|i| RankedIds {
                weight: n.weights[i],
                items: &n.items[i],
                paths: &n.path_ids[i],
            })
            .collect();
        let input = IdInput {
            lists: &lists,
            keys: &n.keys,
            paths: &n.paths,
            key_centrality: key_c,
            path_centrality: path_c,
            demote,
        };
        fuse_ids(&input, 60.0, limit)
    }

    #[test]
    fn ids_agree_with_pairs_and_report_members() {
        let a: &[(&str, &str)] = &[
            ("a1", "a.py"),
            ("b", "vendor/b.py"),
            ("a2", "a.py"),
            ("a1", "a.py"),
        ];
        let b: &[(&str, &str)] = &[("b", "vendor/b.py"), ("a2", "a.py"), ("c", "c.py")];
        let n = numbered(&[(0.6, a), (0.4, b)]);
        let got = fuse_numbered(&n, &[], &[], &[], 10).unwrap();
        let pairs = vec![list(0.6, a), list(0.4, b)];
        let want = fuse(&pairs, &HashMap::<&str, f64>::new(), 60.0, 10);
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(n.keys[g.item], w.key);
            assert_eq!(n.paths[g.path], w.path);
            assert_eq!(g.score, w.score);
            assert_eq!(g.demoted, w.demoted);
            assert_eq!(g.contributions, w.contributions);
            let folded: Vec<&str> = g.folded.iter().map(|&i| n.keys[i]).collect();
            assert_eq!(folded, w.folded);
        }
        let a_py = got.iter().find(|f| n.paths[f.path] == "a.py").unwrap();
        assert_eq!(a_py.members, vec![(0, 0), (0, 2), (0, 3), (1, 1)]);
    }

    #[test]
    fn ids_centrality_by_key_then_path_and_extra_demotion() {
        let a: &[(&str, &str)] = &[("a", "a.py"), ("b", "b.py"), ("c", "c.py")];
        let n = numbered(&[(1.0, a)]);
        // b's own value wins over its file's; c has only its file's; a is demoted by the caller
        let got = fuse_numbered(
            &n,
            &[f64::NAN, 5.0, f64::NAN],
            &[9.0, 0.0, 2.0],
            &[true, false, false],
            10,
        )
        .unwrap();
        let order: Vec<&str> = got.iter().map(|f| n.keys[f.item]).collect();
        assert_eq!(order, ["b", "c", "a"]);
        assert_eq!(got[0].boost, boost(5.0));
        assert_eq!(got[1].boost, boost(2.0));
        assert!(got[2].demoted && !got[0].demoted);
    }

    #[test]
    fn numbers_by_first_appearance() {
        let (ids, first) = number(&["b", "a", "b", "c", "a"]);
        assert_eq!(ids, vec![0, 1, 0, 2, 1]);
        assert_eq!(first, vec![0, 1, 3]);
        assert_eq!(number(&[]), (vec![], vec![]));
    }

    #[test]
    fn ids_out_of_range_and_bad_lengths_are_errors() {
        let n = numbered(&[(1.0, &[("a", "a.py")])]);
        let bad = [5i64];
        let lists = [RankedIds {
            weight: 1.0,
            items: &bad,
            paths: &n.path_ids[0],
        }];
        let input = IdInput {
            lists: &lists,
            keys: &n.keys,
            paths: &n.paths,
            key_centrality: &[],
            path_centrality: &[],
            demote: &[],
        };
        assert!(matches!(
            fuse_ids(&input, 60.0, 10),
            Err(CoreError::InvalidArgument(_))
        ));
        assert!(fuse_numbered(&n, &[1.0, 2.0], &[], &[], 10).is_err());
        assert!(split_lists(&[0, 0], &[0, 0], &[1], &[1.0]).is_err());
        assert!(split_lists(&[0], &[0], &[2], &[1.0]).is_err());
        assert!(split_lists(&[0], &[0], &[1], &[]).is_err());
        assert_eq!(
            split_lists(&[0, 1], &[0, 0], &[1, 1], &[0.5, 0.5])
                .unwrap()
                .len(),
            2
        );
    }
}
