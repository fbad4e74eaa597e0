//! Criterion benches of the Rust kernels, without Python: exact Hamming top-k (the best
//! kernel of this CPU next to the scalar reference), trigram search (a literal, a regex and a
//! case-insensitive literal over real source files) and weighted RRF fusion.
//!
//! `make bench` (or `cargo bench --bench kernels`). The trigram corpus is this repository's
//! own sources unless `MAGUYVA_BENCH_CORPUS` names another tree.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use maguyva_core::fusion::{fuse, RankedList};
use maguyva_core::hamming::search::topk;
use maguyva_core::hamming::{Codes, Kernel, SearchOptions};
use maguyva_core::trigram::build::{build, BuildInput, BuildOptions};
use maguyva_core::trigram::index::TextIndex;
use maguyva_core::trigram::search::{search, Case, SearchSpec};

/// Deterministic pseudo-random bytes (xorshift64*): codes of a known distribution.
fn random_bytes(n: usize, mut state: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        out.extend_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(n);
    out
}

fn hamming(c: &mut Criterion) {
    const WIDTH: usize = 32; // 256-bit codes (the local model's binary embedding)
    const ROWS: usize = 100_000;
    let data = random_bytes(ROWS * WIDTH, 7);
    let query = random_bytes(WIDTH, 11);
    let codes = Codes::new(&data, WIDTH).expect("codes");
    let mut group = c.benchmark_group("hamming_topk_100k_x_256bit_k10");
    group.throughput(Throughput::Bytes((ROWS * WIDTH) as u64));
    let mut kernels = vec![("best", None), ("scalar", Some(Kernel::Scalar))];
    if Kernel::best() != Kernel::Scalar {
        kernels.insert(1, (Kernel::best().name(), Some(Kernel::best())));
    }
    for (name, kernel) in kernels {
        let opts = SearchOptions {
            k: 10,
            threads: 1,
            kernel,
            ..SearchOptions::default()
        };
        group.bench_function(BenchmarkId::new("one_thread", name), |b| {
            b.iter(|| topk(black_box(&query), codes, None, &opts).expect("topk"))
        });
    }
    group.finish();
}

/// Files of the corpus: every regular file under `dir` (hidden folders, `target`, `.venv`
/// and compiled files left out), as (relative path, size).
fn corpus_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = rel.join(&name);
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if name.starts_with('.') || name == "target" || name == "__pycache__" {
                continue;
            }
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && !name.ends_with(".so") && !name.ends_with(".pyc") {
                out.push(path.to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

fn trigram(c: &mut Criterion) {
    let root = std::env::var_os("MAGUYVA_BENCH_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let inputs: Vec<BuildInput> = corpus_files(&root)
        .into_iter()
        .map(|path| BuildInput {
            path,
            chunks: Vec::new(),
        })
        .collect();
    let out = std::env::temp_dir().join(format!("maguyva-bench-trigram-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let report = build(&root, &inputs, &out, &BuildOptions::default()).expect("build");
    let index = TextIndex::open(&out).expect("open");
    eprintln!(
        "trigram corpus: {} ({} files, {} bytes)",
        root.display(),
        report.docs,
        report.content_bytes
    );
    let spec = |pattern: &str, regex: bool, case: Case| SearchSpec {
        pattern: pattern.to_string(),
        regex,
        case,
        whole_word: false,
        path_glob: None,
        max_lines: 1000,
        max_files: usize::MAX,
        max_lines_per_file: 50,
        count_all: false,
    };
    let mut group = c.benchmark_group("trigram_search");
    for (name, s) in [
        ("literal", spec("CoreError", false, Case::Sensitive)),
        (
            "literal_insensitive",
            spec("hamming", false, Case::Insensitive),
        ),
        ("regex", spec(r"fn \w+_index\(", true, Case::Sensitive)),
        (
            "absent_literal",
            spec("zq9xk_absent", false, Case::Sensitive),
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| search(&index, black_box(&s)).expect("search"))
        });
    }
    group.finish();
    drop(index);
    let _ = std::fs::remove_dir_all(&out);
}

fn fusion(c: &mut Criterion) {
    // 4 retrievers' lists of 1 000 chunk keys over 400 files, overlapping as real lists do
    let keys: Vec<(String, String)> = (0..2000)
        .map(|i| {
            (
                format!("chunk-{i:05}"),
                format!("src/pkg{}/mod{}.py", i % 7, i % 400),
            )
        })
        .collect();
    let lists: Vec<RankedList<'_>> = (0..4)
        .map(|l| RankedList {
            weight: [0.4, 0.3, 0.2, 0.1][l],
            items: (0..1000)
                .map(|r| &keys[(r * (l + 1) + l * 97) % keys.len()])
                .map(|(k, p)| (k.as_str(), p.as_str()))
                .collect(),
        })
        .collect();
    let centrality: HashMap<&str, f64> = keys
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 == 0)
        .map(|(i, (k, _))| (k.as_str(), (i % 50) as f64 / 10.0))
        .collect();
    c.bench_function("fuse_4_lists_x_1000_limit_10", |b| {
        b.iter(|| fuse(black_box(&lists), &centrality, 60.0, 10))
    });
}

criterion_group!(benches, hamming, trigram, fusion);
criterion_main!(benches);
