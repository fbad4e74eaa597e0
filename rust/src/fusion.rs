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
pub fn fuse<'a, 'c, S: BuildHasher>(
    lists: &[RankedList<'a>],
    centrality: &HashMap<&'c str, f64, S>,
    k: f64,
    limit: usize,
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

/// Result order: higher score first, then path, then key (deterministic on ties).
fn better(a: &Fused<'_>, b: &Fused<'_>) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.path.cmp(b.path))
        .then_with(|| a.key.cmp(b.key))
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
}
