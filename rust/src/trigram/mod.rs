//! The trigram index for literal and regex search.
//!
//! One idea per file, after Zoekt:
//! - [`ngram`]: trigram packing and case folding.
//! - [`postings`]: delta-varint posting lists and their set operations.
//! - [`format`]: the on-disk layout (versioned header, table of contents, checksums).
//! - [`build`]: the parallel builder (reads files, compresses content, writes postings).
//! - [`plan`]: a regex syntax tree turned into an AND/OR query of trigrams.
//! - [`lz4`]: a resumable LZ4 block decoder (stop once the first matches are found).
//! - [`keytable`]: a sorted (trigram, offset) table in groups of varint gaps.
//! - [`lz4hc`]: an LZ4 block compressor with hash chains (smaller blocks, same decoder).
//! - [`index`]: the loaded, immutable, thread-safe index that answers queries.
//! - [`finder`]: a literal found with `memmem`, skipping the blocks that cannot hold it.
//! - [`search`]: candidate verification with the `regex` crate and line/column reporting.
//! - [`groups`]: a literal's matching lines grouped by enclosing chunk, with their ranking
//!   features.
//! - [`rank`]: the best `k` of those groups, selected in Rust (the rest never reach Python).
//! - [`memo`]: a bounded LRU of compiled patterns.
//! - [`bm25`]: chunk ranking for natural-language questions.
//! - [`spans`]: lines of a stored document cut out as a chunk's text.
//! - [`together`]: a map shared by the calling thread and the pool's helpers (no wait for a
//!   helper that has not started).

pub mod bm25;
pub mod build;
pub mod finder;
pub mod format;
pub mod groups;
pub mod index;
pub mod keytable;
pub mod lz4;
pub mod lz4hc;
pub mod memo;
pub mod ngram;
pub mod plan;
pub mod postings;
pub mod rank;
pub mod search;
pub mod spans;
pub mod together;

/// Every readable file under `dir`, recursively (symlinks not followed), for the ignored
/// throughput tests that read a real tree named by an environment variable.
#[cfg(test)]
pub(crate) fn for_each_file(dir: &std::path::Path, mut f: impl FnMut(Vec<u8>)) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(data) = std::fs::read(&p) {
                f(data);
            }
        }
    }
}
