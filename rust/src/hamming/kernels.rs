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
/// `(queries, rows, out)`: [`GROUP`] queries against every row, `out` query-major.
type GroupFn = unsafe fn(&[u8], &[u8], &mut [u32]);

/// Queries compared with a row while it is in registers by the batch kernels.
pub const GROUP: usize = 4;

/// A kernel that was checked to run on this CPU; the only way to call one.
#[derive(Clone, Copy)]
pub struct Resolved {
    kernel: Kernel,
    f: DistFn,
    /// A kernel for [`GROUP`] queries at once, when the instruction set has one.
    group: Option<GroupFn>,
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
        #[cfg(target_arch = "x86_64")]
        let group: Option<GroupFn> = match self {
            Kernel::Avx512 => Some(x86::avx512_group),
            _ => None,
        };
        #[cfg(not(target_arch = "x86_64"))]
        let group: Option<GroupFn> = None;
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
        Some(Resolved {
            kernel: self,
            f,
            group,
        })
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

    /// Distances from each query of `queries` (whole rows of the code width) to each of the
    /// `n` rows of `rows`, query-major: `out[q * n + r]`.
    ///
    /// Groups of [`GROUP`] queries share each row load and one horizontal reduction when the
    /// kernel has a group form and distances fit in 16 bits (codes up to 65 535 bits); the
    /// rest go one query at a time. Panics (a programming error) if the lengths disagree.
    pub fn distances_multi(&self, queries: &[u8], width: usize, rows: &[u8], out: &mut [u32]) {
        assert!(
            width > 0 && queries.len().is_multiple_of(width) && rows.len().is_multiple_of(width)
        );
        let n = rows.len() / width;
        let nq = queries.len() / width;
        assert!(out.len() == n * nq);
        if n == 0 {
            return;
        }
        let mut done = 0;
        if let Some(g) = self.group.filter(|_| width * 8 <= u16::MAX as usize) {
            while done + GROUP <= nq {
                let qs = &queries[done * width..(done + GROUP) * width];
                let o = &mut out[done * n..(done + GROUP) * n];
                // SAFETY: `group` is only set by `Kernel::resolve` after runtime detection;
                // `qs` holds GROUP rows, `o` GROUP * n slots, and 16-bit fields cannot overflow
                // because no distance exceeds `width * 8 <= 65535`.
                unsafe { g(qs, rows, o) };
                done += GROUP;
            }
        }
        for q in done..nq {
            self.distances(
                &queries[q * width..(q + 1) * width],
                rows,
                &mut out[q * n..(q + 1) * n],
            );
        }
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

    /// Per-lane popcounts of `row XOR query` over `blocks` full 64-byte blocks and a masked tail
    /// (`mask` selects the `rem` valid tail bytes; `qt` is the query's masked tail).
    #[inline(always)]
    unsafe fn avx512_acc(
        q: &[__m512i],
        qt: __m512i,
        p: *const u8,
        blocks: usize,
        mask: __mmask64,
    ) -> __m512i {
        // SAFETY (whole body): the caller guarantees avx512f/bw/vpopcntdq and that `p` points to
        // a row of `blocks * 64 + rem` bytes; the masked tail load touches only the `rem` valid
        // bytes (masked-off lanes are not read), and `q` has `blocks` entries.
        unsafe {
            let mut acc = _mm512_setzero_si512();
            for b in 0..blocks {
                let r = _mm512_loadu_si512(p.add(b * 64) as *const _);
                let x = _mm512_xor_si512(*q.get_unchecked(b), r);
                acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(x));
            }
            if mask != 0 {
                let r = _mm512_maskz_loadu_epi8(mask, p.add(blocks * 64) as *const i8);
                acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(_mm512_xor_si512(qt, r)));
            }
            acc
        }
    }

    /// Four per-lane count vectors packed into 16-bit fields of each 64-bit lane, reduced once:
    /// field `i` of the result is the total of `a[i]`. Valid while every total is < 65 536.
    #[inline(always)]
    unsafe fn avx512_reduce4(a0: __m512i, a1: __m512i, a2: __m512i, a3: __m512i) -> u64 {
        // SAFETY: the caller guarantees avx512f; pure register arithmetic.
        unsafe {
            let p = _mm512_or_si512(
                _mm512_or_si512(a0, _mm512_slli_epi64::<16>(a1)),
                _mm512_or_si512(_mm512_slli_epi64::<32>(a2), _mm512_slli_epi64::<48>(a3)),
            );
            // Lane values are < 65 536 (one row's share), so OR is an add without carries and
            // the 8-lane sum keeps each field below 65 536 (the caller's bound on distances).
            _mm512_reduce_add_epi64(p) as u64
        }
    }

    /// Query blocks (full 64-byte blocks) and the masked tail of one query.
    #[inline(always)]
    unsafe fn avx512_query(
        query: &[u8],
        blocks: usize,
        mask: __mmask64,
    ) -> (Vec<__m512i>, __m512i) {
        // SAFETY: loads stay inside `query` (full blocks, then a masked load of the tail).
        unsafe {
            let q = (0..blocks)
                .map(|b| _mm512_loadu_si512(query.as_ptr().add(b * 64) as *const _))
                .collect();
            (
                q,
                _mm512_maskz_loadu_epi8(mask, query.as_ptr().add(blocks * 64) as *const i8),
            )
        }
    }

    fn tail_mask(width: usize, blocks: usize) -> __mmask64 {
        let rem = width - blocks * 64;
        if rem == 0 {
            0
        } else {
            (1u64 << rem) - 1
        }
    }

    #[inline(always)]
    unsafe fn avx512_body(query: &[u8], rows: &[u8], out: &mut [u32], blocks: usize) {
        let width = query.len();
        let mask = tail_mask(width, blocks);
        // SAFETY: see `avx512_query`.
        let (q, qt) = unsafe { avx512_query(query, blocks, mask) };
        let mut done = 0;
        if width * 8 <= u16::MAX as usize {
            // Four rows per horizontal reduction (16-bit fields cannot overflow: see above).
            for (quad, slots) in rows.chunks_exact(4 * width).zip(out.chunks_exact_mut(4)) {
                let p = quad.as_ptr();
                // SAFETY: `quad` holds four rows of `width` bytes.
                let s = unsafe {
                    avx512_reduce4(
                        avx512_acc(&q, qt, p, blocks, mask),
                        avx512_acc(&q, qt, p.add(width), blocks, mask),
                        avx512_acc(&q, qt, p.add(2 * width), blocks, mask),
                        avx512_acc(&q, qt, p.add(3 * width), blocks, mask),
                    )
                };
                for (i, slot) in slots.iter_mut().enumerate() {
                    *slot = ((s >> (16 * i)) & 0xffff) as u32;
                }
            }
            done = out.len() / 4 * 4;
        }
        for (row, slot) in rows[done * width..]
            .chunks_exact(width)
            .zip(out[done..].iter_mut())
        {
            // SAFETY: `row` has `width` bytes.
            let acc = unsafe { avx512_acc(&q, qt, row.as_ptr(), blocks, mask) };
            *slot = _mm512_reduce_add_epi64(acc) as u32;
        }
    }

    #[inline(always)]
    unsafe fn avx512_group_body(queries: &[u8], rows: &[u8], out: &mut [u32], blocks: usize) {
        let width = queries.len() / super::GROUP;
        let n = rows.len() / width;
        let mask = tail_mask(width, blocks);
        // SAFETY: see `avx512_query`; each slice is one query of `width` bytes.
        let (q0, t0) = unsafe { avx512_query(&queries[..width], blocks, mask) };
        let (q1, t1) = unsafe { avx512_query(&queries[width..2 * width], blocks, mask) };
        let (q2, t2) = unsafe { avx512_query(&queries[2 * width..3 * width], blocks, mask) };
        let (q3, t3) = unsafe { avx512_query(&queries[3 * width..], blocks, mask) };
        let (o0, rest) = out.split_at_mut(n);
        let (o1, rest) = rest.split_at_mut(n);
        let (o2, o3) = rest.split_at_mut(n);
        for (r, row) in rows.chunks_exact(width).enumerate() {
            let p = row.as_ptr();
            // SAFETY: `row` has `width` bytes; the row is re-read from L1 by the later queries.
            let s = unsafe {
                avx512_reduce4(
                    avx512_acc(&q0, t0, p, blocks, mask),
                    avx512_acc(&q1, t1, p, blocks, mask),
                    avx512_acc(&q2, t2, p, blocks, mask),
                    avx512_acc(&q3, t3, p, blocks, mask),
                )
            };
            o0[r] = (s & 0xffff) as u32;
            o1[r] = ((s >> 16) & 0xffff) as u32;
            o2[r] = ((s >> 32) & 0xffff) as u32;
            o3[r] = (s >> 48) as u32;
        }
    }

    /// [`super::GROUP`] queries against every row (`out` query-major); distances must fit in
    /// 16 bits (checked by the caller).
    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,popcnt")]
    pub unsafe fn avx512_group(queries: &[u8], rows: &[u8], out: &mut [u32]) {
        // SAFETY: the features are enabled for this function; each arm only fixes `blocks`.
        unsafe {
            match queries.len() / super::GROUP / 64 {
                1 => avx512_group_body(queries, rows, out, 1),
                2 => avx512_group_body(queries, rows, out, 2),
                4 => avx512_group_body(queries, rows, out, 4),
                n => avx512_group_body(queries, rows, out, n),
            }
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
