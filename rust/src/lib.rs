//! Maguyva's native core.
//!
//! Three hot paths live here, each as plain Rust with no knowledge of Python:
//! - [`fusion`]: weighted Reciprocal Rank Fusion with the centrality boost, path demotion
//!   and best-chunk-per-file.
//! - [`trigram`]: the trigram index for literal and regex search, and the repository walker.
//! - [`hamming`]: exact top-k by Hamming distance over packed binary codes.
//! - [`graph`]: the graph files' name hash (part of the on-disk format) and the adjacency's
//!   counting sorts.
//! - [`lines`]: printing a result's matching lines (text and JSON Lines) in one buffer, or
//!   every result of an answer at once; [`confined`]: reading a file for it inside the root.
//!
//! The only module that touches PyO3 is `py`, compiled with the `python` feature, so plain
//! `cargo test` runs without a Python interpreter.

pub mod bm25;
pub mod confined;
pub mod error;
pub mod fusion;
pub mod graph;
pub mod hamming;
pub mod lines;
pub mod static_embed;
pub mod trigram;
pub mod walk;
pub mod wordpiece;

#[cfg(feature = "python")]
mod py;
