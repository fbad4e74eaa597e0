//! Exact top-k by Hamming distance over packed binary codes.
//!
//! Codes are rows of `dim / 8` bytes in the bit order of Voyage's `ubinary` (and of
//! `np.packbits`): the first dimension is the most significant bit of the first byte. The
//! distance does not depend on the bit order as long as queries and codes share it.
//!
//! - [`scalar`]: the byte-at-a-time reference every kernel is tested against.
//! - [`kernels`]: AVX-512 VPOPCNTDQ, AVX2, NEON and 64-bit-word kernels, picked at run time.
//! - [`select`]: counting select with a falling threshold, heap fallback; ties go to the smaller id.
//! - [`search`]: blocked single and batch scans over borrowed codes (e.g. a memory-mapped file),
//!   split across the rayon pool only when the scan is large enough to pay for it.
//! - [`index`]: an owned store with appends and tombstones for incremental updates.
//!
//! ```
//! use maguyva_core::hamming::{search, SearchOptions, Codes};
//! let codes = [0b1111_0000u8, 0b0000_0000, 0b1111_1111];
//! let opts = SearchOptions { k: 2, ..Default::default() };
//! let hits = search::topk(&[0b1111_0001], Codes::new(&codes, 1).unwrap(), None, &opts).unwrap();
//! assert_eq!(hits[0], vec![(1, 0), (3, 2)]); // (distance, id)
//! ```

pub mod index;
pub mod kernels;
pub mod scalar;
pub mod search;
pub mod select;

pub use index::HammingIndex;
pub use kernels::Kernel;
pub use search::{Codes, SearchOptions};
pub use select::{Neighbor, Selector};

#[cfg(test)]
mod tests;
