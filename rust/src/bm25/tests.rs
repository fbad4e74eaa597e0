//! The postings scorer against the content scan over every candidate document
//! (`trigram::bm25::rank_all`) on real builds: random small corpora, segments with
//! tombstones, and damaged or missing files.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::build::build_for_segment;
use super::format::postings_name;
use super::score::Bm25Index;
use crate::trigram::bm25::{rank_all, ChunkScore};
use crate::trigram::build::{build, BuildInput, BuildOptions, ChunkSpan};
use crate::trigram::index::{SegmentSpec, TextIndex};

fn scratch(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("maguyva-bm25-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("root")).expect("mkdir");
    d
}

/// A file: its lines and chunks (1-based inclusive spans, possibly nested or overlapping).
type FileSpec = (Vec<String>, Vec<(u32, u32)>);

fn write_files(root: &Path, files: &[(String, FileSpec)]) -> Vec<BuildInput> {
    files
        .iter()
        .map(|(path, (lines, chunks))| {
            std::fs::write(root.join(path), lines.join("\n")).expect("write");
            BuildInput {
                path: path.clone(),
                chunks: chunks
                    .iter()
                    .enumerate()
                    .map(|(i, &(s, e))| ChunkSpan {
                        start_line: s,
                        end_line: e,
                        id: format!("{path}#{i}"),
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Build one segment named `name` (`trigram` for the base) and its postings.
fn build_segment(dir: &Path, inputs: &[BuildInput], name: &str) -> SegmentSpec {
    let opts = BuildOptions {
        index_file: format!("{name}.idx"),
        content_file: format!("{name}.bin"),
        ..BuildOptions::default()
    };
    let r = build(&dir.join("root"), inputs, dir, &opts).expect("build");
    build_for_segment(dir, &opts.index_file, &opts.content_file).expect("postings");
    SegmentSpec {
        index_file: opts.index_file,
        content_file: opts.content_file,
        build_id: r.build_id,
        n_docs: r.docs,
        deleted: Vec::new(),
    }
}

fn open(dir: &Path, specs: &[SegmentSpec]) -> (TextIndex, Bm25Index) {
    let index = TextIndex::open_segments(dir, specs).expect("open");
    let names: Vec<String> = specs.iter().map(|s| s.index_file.clone()).collect();
    let bm25 = Bm25Index::open(dir, &names, &index)
        .expect("postings")
        .expect("present");
    (index, bm25)
}

/// A ranked chunk with its score's bits: equality is to the last bit.
type Key = (u32, u32, u32, Option<String>, u64, Vec<u32>, Vec<usize>);

fn key(r: &[ChunkScore]) -> Vec<Key> {
    r.iter()
        .map(|c| {
            (
                c.doc,
                c.start_line,
                c.end_line,
                c.chunk_id.clone(),
                c.score.to_bits(),
                c.lines.clone(),
                c.terms.clone(),
            )
        })
        .collect()
}

const PIECES: &[&str] = &[
    "cache",
    "Cache",
    "lru",
    "LRU_cache",
    "evict",
    "evicted",
    "entries",
    "entry",
    "parse",
    "parseConfig",
    "config",
    "ab",
    "aba",
    "abab",
    "x",
    "q7",
    "_",
    "__init__",
    "42",
    "é",
];
const GLUE: &[&str] = &[" ", "  ", ".", "(", ")", "_", "-", "::", "\t", "é", ""];

fn line() -> impl Strategy<Value = String> {
    prop::collection::vec((0..PIECES.len(), 0..GLUE.len()), 0..8).prop_map(|parts| {
        parts
            .into_iter()
            .map(|(p, g)| format!("{}{}", PIECES[p], GLUE[g]))
            .collect()
    })
}

fn file() -> impl Strategy<Value = FileSpec> {
    prop::collection::vec(line(), 0..12).prop_flat_map(|lines| {
        let n = lines.len().max(1) as u32;
        let span = (1..=n + 1, 0..=n).prop_map(|(a, len)| (a, a + len));
        (Just(lines), prop::collection::vec(span, 0..4))
    })
}

fn corpus() -> impl Strategy<Value = Vec<(String, FileSpec)>> {
    prop::collection::vec(file(), 1..7).prop_map(|fs| {
        fs.into_iter()
            .enumerate()
            .map(|(i, f)| (format!("f{i:02}.txt"), f))
            .collect()
    })
}

fn terms() -> impl Strategy<Value = Vec<String>> {
    let term = prop_oneof![
        // Terms as `split_terms` makes them: ASCII (a non-ASCII one goes to the scan).
        (0..PIECES.len() - 1).prop_map(|p| PIECES[p].to_lowercase()),
        "[a-c_]{1,4}",
        Just("parseconfig".to_string()),
        Just("cache".to_string()),
    ];
    prop::collection::vec(term, 1..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Exactly the scan's ranking (scores to the bit, lines, terms, ties) on one segment.
    #[test]
    fn postings_rank_as_the_scan(files in corpus(), terms in terms(), k in 1usize..40) {
        let dir = scratch("prop");
        let inputs = write_files(&dir.join("root"), &files);
        let spec = build_segment(&dir, &inputs, "trigram");
        let (index, bm25) = open(&dir, &[spec]);
        let want = rank_all(&index, &terms, k).expect("scan");
        let got = bm25.rank(&index, &terms, k).expect("postings").expect("answerable");
        prop_assert_eq!(key(&got), key(&want));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A base with a changed and a deleted file tombstoned, the changed file in a second
/// segment: the same answers as a from-scratch build of the live files.
#[test]
fn segments_with_tombstones_rank_as_a_fresh_build() {
    let lines = |s: &str| s.split('\n').map(str::to_string).collect::<Vec<_>>();
    let v1: Vec<(String, FileSpec)> = vec![
        (
            "a.py".into(),
            (lines("def lru_cache():\n    evict(cache)\n"), vec![(1, 2)]),
        ),
        (
            "b.py".into(),
            (lines("cache = {}\ncache_entries = 3\n"), vec![]),
        ),
        (
            "c.py".into(),
            (
                lines("class Cache:\n  def evict(self):\n    pass"),
                vec![(1, 3), (2, 3)],
            ),
        ),
    ];
    let dir = scratch("seg");
    let base = build_segment(&dir, &write_files(&dir.join("root"), &v1), "trigram");
    let changed = vec![(
        "b.py".to_string(),
        (lines("evicted = cache.pop()\nentries\n"), vec![(1, 1)]),
    )];
    let seg = build_segment(
        &dir,
        &write_files(&dir.join("root"), &changed),
        "seg-000001",
    );
    let base = SegmentSpec {
        deleted: vec![1, 2],
        ..base
    };
    let (index, bm25) = open(&dir, &[base, seg]);

    let fresh_dir = scratch("fresh");
    let live = vec![v1[0].clone(), changed[0].clone()];
    let fresh = build_segment(
        &fresh_dir,
        &write_files(&fresh_dir.join("root"), &live),
        "trigram",
    );
    let (fresh_index, fresh_bm25) = open(&fresh_dir, &[fresh]);
    for terms in [
        vec!["cache"],
        vec!["evict", "entries"],
        vec!["class"],
        vec!["pop", "ca"],
    ] {
        let terms: Vec<String> = terms.into_iter().map(String::from).collect();
        let got = bm25
            .rank(&index, &terms, 10)
            .expect("rank")
            .expect("answerable");
        let want = fresh_bm25
            .rank(&fresh_index, &terms, 10)
            .expect("rank")
            .expect("answerable");
        assert_eq!(key(&got), key(&want), "{terms:?}");
        assert_eq!(key(&got), key(&rank_all(&index, &terms, 10).expect("scan")));
        // c.py is deleted: never ranked.
        assert!(got.iter().all(|c| index.path(c.doc) != "c.py"));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&fresh_dir);
}

/// Missing postings: `None` (the caller scans); any flipped byte: an error at open; a term
/// outside the word alphabet: `None`.
#[test]
fn missing_damaged_and_unanswerable() {
    let dir = scratch("damage");
    let files = vec![(
        "a.txt".to_string(),
        (vec!["lru cache evict".to_string(); 3], vec![(1, 2)]),
    )];
    let spec = build_segment(&dir, &write_files(&dir.join("root"), &files), "trigram");
    let names = vec![spec.index_file.clone()];
    let index = TextIndex::open_segments(&dir, std::slice::from_ref(&spec)).expect("open");
    let bm25 = Bm25Index::open(&dir, &names, &index)
        .expect("ok")
        .expect("some");
    let odd = vec!["lru cache".to_string()];
    assert!(bm25.rank(&index, &odd, 5).expect("rank").is_none());

    let path = dir.join(postings_name(&spec.index_file));
    let good = std::fs::read(&path).expect("read");
    for i in (0..good.len()).step_by(7) {
        let mut bad = good.clone();
        bad[i] ^= 0x01;
        std::fs::write(&path, &bad).expect("write");
        assert!(Bm25Index::open(&dir, &names, &index).is_err(), "byte {i}");
    }
    std::fs::remove_file(&path).expect("rm");
    assert!(Bm25Index::open(&dir, &names, &index).expect("ok").is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The postings are the same bytes whatever the number of documents split at once (the
/// merge of one batch overlaps the split of the next): one batch, one document, and sizes
/// that leave a short last batch, over files of shared and own words, chunks and windows.
#[test]
fn postings_are_the_same_bytes_for_any_batch_size() {
    use super::build::build_postings_batched;
    use crate::trigram::index::Segment;

    let d = scratch("batches");
    let files: Vec<(String, FileSpec)> = (0..23u32)
        .map(|f| {
            let lines: Vec<String> = (0..(f * 7 % 90 + 1))
                .map(|l| {
                    format!(
                        "shared_word Word{} w{}_{} x{} shared_word",
                        l % 5,
                        f,
                        l,
                        (f + l) % 11
                    )
                })
                .collect();
            let n = lines.len() as u32;
            let chunks = if f % 3 == 0 {
                vec![]
            } else {
                vec![(1, n.min(10)), (n / 2 + 1, n)]
            };
            (format!("f{f}.txt"), (lines, chunks))
        })
        .collect();
    let inputs = write_files(&d.join("root"), &files);
    let spec = build_segment(&d, &inputs, "trigram");
    let seg = Segment::open(&d.join(&spec.index_file), &d.join(&spec.content_file)).expect("open");
    let reference = std::fs::read(d.join(postings_name(&spec.index_file))).expect("postings");
    // scan_below 0: the trigram lists of the vocabulary are written too
    let one = d.join("one.postings");
    build_postings_batched(&seg, &one, 0, 23).expect("postings");
    let whole = std::fs::read(&one).expect("read");
    assert!(!whole.is_empty());
    for batch in [1u32, 2, 5, 22, 512] {
        let out = d.join(format!("batch{batch}.postings"));
        build_postings_batched(&seg, &out, 0, batch).expect("postings");
        assert_eq!(std::fs::read(&out).expect("read"), whole, "batch {batch}");
    }
    let default = d.join("default.postings");
    build_postings_batched(&seg, &default, super::format::SCAN_VOCAB_BELOW, 3).expect("postings");
    assert_eq!(std::fs::read(&default).expect("read"), reference);
    let _ = std::fs::remove_dir_all(&d);
}
