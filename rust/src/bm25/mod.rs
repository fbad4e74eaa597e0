//! BM25 for natural-language questions from postings written at index build.
//!
//! - [`format`]: the postings file's layout (versioned header, checksummed sections).
//! - [`build`]: words and their per-unit occurrences from a built segment.
//! - [`reader`]: the memory-mapped, validated file; words holding a term.
//! - [`score`]: term-at-a-time scoring and the top-k heap.
//!
//! The content scan in `trigram::bm25` stays as the fallback (an index without postings)
//! and as the reference the scores are tested against.

pub mod build;
pub mod format;
pub mod reader;
pub mod score;

#[cfg(test)]
mod tests;
