//! Distance kernels: one function per instruction set, chosen once per call.
//!
//! Each kernel computes the distances from one query to a block of rows into a `u32` buffer; the
//! caller feeds that buffer to a top-k selector. The kernel for a call is resolved once (CPU
//! features are detected at run time, never assumed at compile time) and the width is
//! specialised by a `match` outside the row loop, so the inner loop never branches on either.

use std::sync::OnceLock;

use super::scalar;

/// An instruction-set family for the distance computation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// Byte-at-a-time reference (the oracle).
    Scalar,
    /// 64-bit words with the `popcnt` instruction (x86-64) or `cnt` (aarch64).
    Words,
    /// AVX2 nibble lookup (`vpshufb`) with `vpsadbw` accumulation.
    Avx2,
    /// AVX-512 `vpopcntq` with masked loads for the tail (needs F, BW and VPOPCNTDQ).
    Avx512,
    /// NEON `vcntq_u8` (aarch64).
    Neon,
}

/// Every kernel, fastest first; [`Kernel::best`] picks the first supported one.
pub const ALL: [Kernel; 5] = [
    Kernel::Avx512,
    Kernel::Avx2,
    Kernel::Neon,
    Kernel::Words,
    Kernel::Scalar,
];

type DistFn = unsafe fn(&[u8], &[u8], &mut [u32]);

/// A kernel that was checked to run on this CPU; the only way to call one.
#[derive(Clone, Copy)]
pub struct Resolved {
    kernel: Kernel,
    f: DistFn,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Resolved({})", self.kernel.name())
    }
}

impl Kernel {
    /// The stable name used in the Python API and benchmark output.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar",
            Kernel::Words => "words",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
            Kernel::Neon => "neon",
        }
    }

    /// Parse a kernel name as returned by [`Kernel::name`].
    pub fn from_name(name: &str) -> Option<Kernel> {
        ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether this CPU can run the kernel (runtime detection).
    pub fn is_supported(self) -> bool {
        match self {
            Kernel::Scalar | Kernel::Words => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
                    && std::arch::is_x86_feature_detected!("popcnt")
            }
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The supported kernels, fastest first.
    pub fn available() -> Vec<Kernel> {
        ALL.into_iter().filter(|k| k.is_supported()).collect()
    }

    /// The fastest supported kernel (detected once per process).
    pub fn best() -> Kernel {
        static BEST: OnceLock<Kernel> = OnceLock::new();
        *BEST.get_or_init(|| {
            Kernel::available()
                .first()
                .copied()
                .unwrap_or(Kernel::Scalar)
        })
    }

    /// Check support and return a callable kernel, or `None` if this CPU lacks the features.
    pub fn resolve(self) -> Option<Resolved> {
        if !self.is_supported() {
            return None;
        }
        let f: DistFn = match self {
            Kernel::Scalar => scalar_entry,
            Kernel::Words => words_entry,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => x86::avx2_distances,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => x86::avx512_distances,
            #[cfg(target_arch = "aarch64")]
            Kernel::Neon => arm::neon_distances,
            #[allow(unreachable_patterns)]
            _ => return None,
        };
        Some(Resolved { kernel: self, f })
    }
}

impl Resolved {
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Distances from `query` to each of the `out.len()` rows of `rows`.
    ///
    /// Panics (a programming error, not user input) if the lengths disagree.
    pub fn distances(&self, query: &[u8], rows: &[u8], out: &mut [u32]) {
        assert!(!query.is_empty() && rows.len() == query.len() * out.len());
        // SAFETY: `Resolved` is only built by `Kernel::resolve`, after runtime detection confirmed
        // the CPU features the function was compiled for; the lengths were checked just above.
        unsafe { (self.f)(query, rows, out) }
    }
}

unsafe fn scalar_entry(query: &[u8], rows: &[u8], out: &mut [u32]) {
    scalar::distances(query, rows, out)
}

unsafe fn words_entry(query: &[u8], rows: &[u8], out: &mut [u32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: popcnt was just detected.
            return unsafe { x86::words_popcnt(query, rows, out) };
        }
    }
    scalar::distances_words(query, rows, out)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::scalar;

    #[target_feature(enable = "popcnt")]
    pub unsafe fn words_popcnt(query: &[u8], rows: &[u8], out: &mut [u32]) {
        scalar::distances_words(query, rows, out)
    }

    /// Popcount of the XOR of `blocks` 32-byte blocks of `q` and `row` (Mula's nibble lookup).
    #[inline(always)]
    unsafe fn avx2_row(q: &[__m256i], row: *const u8, blocks: usize) -> u64 {
        // SAFETY (whole body): the caller guarantees avx2 and that `row` has `blocks * 32` bytes.
        unsafe {
            let lookup = _mm256_setr_epi8(
                0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3,
                2, 3, 3, 4,
            );
            let low = _mm256_set1_epi8(0x0f);
            let mut total = _mm256_setzero_si256();
            let mut b = 0;
            while b < blocks {
                // Byte counters hold at most 8 per block: flush every 31 blocks to stay < 256.
                let end = (b + 31).min(blocks);
                let mut acc = _mm256_setzero_si256();
                while b < end {
                    let r = _mm256_loadu_si256(row.add(b * 32) as *const __m256i);
                    let x = _mm256_xor_si256(*q.get_unchecked(b), r);
                    let lo = _mm256_and_si256(x, low);
                    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(x), low);
                    acc = _mm256_add_epi8(acc, _mm256_shuffle_epi8(lookup, lo));
                    acc = _mm256_add_epi8(acc, _mm256_shuffle_epi8(lookup, hi));
                    b += 1;
                }
                total = _mm256_add_epi64(total, _mm256_sad_epu8(acc, _mm256_setzero_si256()));
            }
            let s = _mm_add_epi64(
                _mm256_castsi256_si128(total),
                _mm256_extracti128_si256::<1>(total),
            );
            (_mm_cvtsi128_si64(s) + _mm_extract_epi64::<1>(s)) as u64
        }
    }

    #[inline(always)]
    unsafe fn avx2_body(query: &[u8], rows: &[u8], out: &mut [u32], blocks: usize) {
        let width = query.len();
        let body = blocks * 32;
        // SAFETY: `query` has at least `body` bytes; loads are unaligned.
        let q: Vec<__m256i> = (0..blocks)
            .map(|b| unsafe { _mm256_loadu_si256(query.as_ptr().add(b * 32) as *const __m256i) })
            .collect();
        let tail = &query[body..];
        for (row, slot) in rows.chunks_exact(width).zip(out.iter_mut()) {
            // SAFETY: `row` has `width >= body` bytes and avx2 is enabled by the caller.
            let d = unsafe { avx2_row(&q, row.as_ptr(), blocks) } as u32;
            *slot = d + if tail.is_empty() {
                0
            } else {
                scalar::distance(tail, &row[body..])
            };
        }
    }

    /// AVX2 kernel, specialised for the common widths (256 to 2048 bits) by constant `blocks`.
    #[target_feature(enable = "avx2,popcnt")]
    pub unsafe fn avx2_distances(query: &[u8], rows: &[u8], out: &mut [u32]) {
        // SAFETY: avx2 is enabled for this function; each arm only fixes `blocks`.
        unsafe {
            match query.len() / 32 {
                1 => avx2_body(query, rows, out, 1),
                2 => avx2_body(query, rows, out, 2),
                4 => avx2_body(query, rows, out, 4),
                8 => avx2_body(query, rows, out, 8),
                n => avx2_body(query, rows, out, n),
            }
        }
    }

    // The AVX-512 intrinsics are stable since Rust 1.89 (the crate's declared MSRV is older).
    #[allow(clippy::incompatible_msrv)]
    #[inline(always)]
    unsafe fn avx512_body(query: &[u8], rows: &[u8], out: &mut [u32], blocks: usize) {
        let width = query.len();
        let rem = width - blocks * 64;
        let mask: __mmask64 = if rem == 0 { 0 } else { (1u64 << rem) - 1 };
        // SAFETY: loads stay inside `query` (full blocks, then a masked load of `rem` bytes).
        let q: Vec<__m512i> = (0..blocks)
            .map(|b| unsafe { _mm512_loadu_si512(query.as_ptr().add(b * 64) as *const _) })
            .collect();
        let qt =
            unsafe { _mm512_maskz_loadu_epi8(mask, query.as_ptr().add(blocks * 64) as *const i8) };
        for (row, slot) in rows.chunks_exact(width).zip(out.iter_mut()) {
            let p = row.as_ptr();
            // SAFETY: `row` has `width` bytes: full 64-byte blocks, then a masked tail load that
            // touches only the `rem` valid bytes (masked-off lanes are not read).
            let d = unsafe {
                let mut acc = _mm512_setzero_si512();
                for (b, qb) in q.iter().enumerate() {
                    let r = _mm512_loadu_si512(p.add(b * 64) as *const _);
                    acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(_mm512_xor_si512(*qb, r)));
                }
                if rem != 0 {
                    let r = _mm512_maskz_loadu_epi8(mask, p.add(blocks * 64) as *const i8);
                    acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(_mm512_xor_si512(qt, r)));
                }
                _mm512_reduce_add_epi64(acc)
            };
            *slot = d as u32;
        }
    }

    /// AVX-512 VPOPCNTDQ kernel, specialised like the AVX2 one.
    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,popcnt")]
    pub unsafe fn avx512_distances(query: &[u8], rows: &[u8], out: &mut [u32]) {
        // SAFETY: the features are enabled for this function; each arm only fixes `blocks`.
        unsafe {
            match query.len() / 64 {
                1 => avx512_body(query, rows, out, 1),
                2 => avx512_body(query, rows, out, 2),
                4 => avx512_body(query, rows, out, 4),
                n => avx512_body(query, rows, out, n),
            }
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use std::arch::aarch64::*;

    use super::scalar;

    /// NEON kernel: 16-byte blocks with `vcntq_u8`, widened every block; bytes for the tail.
    #[target_feature(enable = "neon")]
    pub unsafe fn neon_distances(query: &[u8], rows: &[u8], out: &mut [u32]) {
        let width = query.len();
        let blocks = width / 16;
        let body = blocks * 16;
        let tail = &query[body..];
        for (row, slot) in rows.chunks_exact(width).zip(out.iter_mut()) {
            // SAFETY: neon is enabled; every load reads 16 bytes inside `query` or `row`.
            let d = unsafe {
                let mut acc = vdupq_n_u32(0);
                for b in 0..blocks {
                    let x = veorq_u8(
                        vld1q_u8(query.as_ptr().add(b * 16)),
                        vld1q_u8(row.as_ptr().add(b * 16)),
                    );
                    acc = vpadalq_u16(acc, vpaddlq_u8(vcntq_u8(x)));
                }
                vaddvq_u32(acc)
            };
            *slot = d + scalar::distance(tail, &row[body..]);
        }
    }
}
