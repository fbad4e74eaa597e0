//! An LZ4 block compressor that searches harder than `lz4_flex`'s: hash chains over the
//! last 64 KiB (up to [`ATTEMPTS`] earlier positions per hash) and one step of lazy
//! matching, as LZ4's own "high compression" mode does at its lower levels. The output is an
//! ordinary LZ4 block, decoded by the same decoders at the same speed (fewer, longer
//! sequences): the stdlib's stored content is 18 % smaller than `lz4_flex::block::compress`'s
//! (docs/index-size-content.md).
//!
//! Block rules kept (the LZ4 block format): a match is at least [`MIN_MATCH`] bytes, its
//! offset 1..=65535; no match starts in the last [`MF_LIMIT`] bytes and the last
//! [`LAST_LITERALS`] bytes are literals.

/// Earlier positions tried per hash.
pub const ATTEMPTS: usize = 24;
pub const MIN_MATCH: usize = 4;
pub const MF_LIMIT: usize = 12;
pub const LAST_LITERALS: usize = 5;
const WINDOW: usize = 1 << 16;
const MAX_HASH_LOG: u32 = 16;

/// Reusable tables (one per worker thread).
#[derive(Default)]
pub struct Tables {
    head: Vec<u32>,
    chain: Vec<u16>,
}

#[inline]
fn read4(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Bytes equal from `a` and `b` onwards (`a < b`), stopping at `end`.
#[inline]
fn common(src: &[u8], a: usize, b: usize, end: usize) -> usize {
    let mut n = 0;
    while b + n + 8 <= end {
        let x = u64::from_le_bytes(src[a + n..a + n + 8].try_into().unwrap_or([0; 8]))
            ^ u64::from_le_bytes(src[b + n..b + n + 8].try_into().unwrap_or([0; 8]));
        if x != 0 {
            return n + (x.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    while b + n < end && src[a + n] == src[b + n] {
        n += 1;
    }
    n
}

struct Matcher<'a> {
    src: &'a [u8],
    t: &'a mut Tables,
    shift: u32,
    /// Positions below this are in the chains.
    next: usize,
    attempts: usize,
}

impl Matcher<'_> {
    #[inline]
    fn hash(&self, i: usize) -> usize {
        (read4(self.src, i).wrapping_mul(2_654_435_761) >> self.shift) as usize
    }

    /// Insert every position before `upto` into the chains.
    fn insert(&mut self, upto: usize) {
        while self.next < upto {
            let i = self.next;
            let h = self.hash(i);
            let prev = self.t.head[h] as usize;
            let delta = if prev == u32::MAX as usize || i - prev >= WINDOW {
                0
            } else {
                i - prev
            };
            self.t.chain[i % WINDOW] = delta as u16;
            self.t.head[h] = i as u32;
            self.next += 1;
        }
    }

    /// The longest earlier match at `i` ending by `end`: (length, offset), length 0 if none.
    fn best(&mut self, i: usize, end: usize) -> (usize, usize) {
        self.insert(i);
        let h = self.hash(i);
        let mut cand = self.t.head[h] as usize;
        let (mut len, mut off) = (0usize, 0usize);
        let want = read4(self.src, i);
        for _ in 0..self.attempts {
            if cand == u32::MAX as usize || cand >= i || i - cand >= WINDOW {
                break;
            }
            if read4(self.src, cand) == want {
                let n = common(self.src, cand, i, end);
                if n > len {
                    (len, off) = (n, i - cand);
                }
            }
            let d = self.t.chain[cand % WINDOW] as usize;
            if d == 0 {
                break;
            }
            cand -= d;
        }
        if len < MIN_MATCH {
            (0, 0)
        } else {
            (len, off)
        }
    }
}

fn put_len(out: &mut Vec<u8>, mut n: usize) {
    while n >= 255 {
        out.push(255);
        n -= 255;
    }
    out.push(n as u8);
}

fn sequence(out: &mut Vec<u8>, literals: &[u8], m: Option<(usize, usize)>) {
    let ll = literals.len();
    let ml = m.map_or(0, |(len, _)| len - MIN_MATCH);
    let token = ((ll.min(15) as u8) << 4) | if m.is_some() { ml.min(15) as u8 } else { 0 };
    out.push(token);
    if ll >= 15 {
        put_len(out, ll - 15);
    }
    out.extend_from_slice(literals);
    if let Some((_, off)) = m {
        out.extend_from_slice(&(off as u16).to_le_bytes());
        if ml >= 15 {
            put_len(out, ml - 15);
        }
    }
}

/// `src` as one LZ4 block.
pub fn compress(src: &[u8], t: &mut Tables) -> Vec<u8> {
    compress_with(src, t, ATTEMPTS)
}

/// As [`compress`], trying up to `attempts` earlier positions per hash.
pub fn compress_with(src: &[u8], t: &mut Tables, attempts: usize) -> Vec<u8> {
    let n = src.len();
    let mut out = Vec::with_capacity(n / 2 + 16);
    if n < MF_LIMIT + 1 {
        sequence(&mut out, src, None);
        return out;
    }
    let bits = (usize::BITS - n.leading_zeros()).clamp(8, MAX_HASH_LOG);
    t.head.clear();
    t.head.resize(1 << bits, u32::MAX);
    t.chain.resize(WINDOW, 0);
    let mut m = Matcher {
        src,
        t,
        shift: 32 - bits,
        next: 0,
        attempts,
    };
    let (last_start, match_end) = (n - MF_LIMIT, n - LAST_LITERALS);
    let (mut anchor, mut i) = (0usize, 0usize);
    while i <= last_start {
        let (len, off) = m.best(i, match_end);
        if len == 0 {
            i += 1;
            continue;
        }
        // one step lazy: a longer match at the next byte is taken instead
        let (len, off, at) = if i < last_start {
            let (l2, o2) = m.best(i + 1, match_end);
            if l2 > len {
                (l2, o2, i + 1)
            } else {
                (len, off, i)
            }
        } else {
            (len, off, i)
        };
        sequence(&mut out, &src[anchor..at], Some((len, off)));
        i = at + len;
        anchor = i;
    }
    sequence(&mut out, &src[anchor..], None);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(src: &[u8]) -> Vec<u8> {
        let packed = compress(src, &mut Tables::default());
        let got = lz4_flex::block::decompress(&packed, src.len()).expect("decodes");
        assert_eq!(got, src);
        packed
    }

    #[test]
    fn repetitive_text_shrinks_more_than_the_fast_compressor() {
        let text: String = (0..3000)
            .map(|i| format!("    def method_{}(self, value_{i}):\n", i % 37))
            .collect();
        let packed = round_trip(text.as_bytes());
        assert!(packed.len() < lz4_flex::block::compress(text.as_bytes()).len());
        for n in [0, 1, 12, 13, 17, 64] {
            round_trip(&text.as_bytes()[..n]);
        }
        round_trip(&[7u8; 100_000]);
    }

    /// Sizes, compression CPU and decoding speed against `lz4_flex` on real files (not run
    /// by default): `MAGUYVA_LZ4_BENCH=DIR cargo test --release --lib lz4hc_sizes --
    /// --ignored --nocapture`.
    #[test]
    #[ignore]
    fn lz4hc_sizes() {
        let Ok(dir) = std::env::var("MAGUYVA_LZ4_BENCH") else {
            return;
        };
        let mut files = Vec::new();
        crate::trigram::for_each_file(std::path::Path::new(&dir), |data| files.push(data));
        let raw: usize = files.iter().map(Vec::len).sum();
        let decode = |blocks: &[Vec<u8>]| {
            let mut out = Vec::new();
            let mut best = f64::MAX;
            for _ in 0..7 {
                let t = std::time::Instant::now();
                for (b, f) in blocks.iter().zip(&files) {
                    crate::trigram::lz4::decompress_into(b, f.len(), &mut out).expect("decodes");
                }
                best = best.min(t.elapsed().as_secs_f64());
            }
            raw as f64 / best / 1e9
        };
        let t = std::time::Instant::now();
        let fast: Vec<Vec<u8>> = files.iter().map(|f| lz4_flex::block::compress(f)).collect();
        let fast_s = t.elapsed().as_secs_f64();
        let size = |b: &[Vec<u8>]| b.iter().map(Vec::len).sum::<usize>();
        println!(
            "{} files, {raw} bytes; lz4_flex {} ({:.3}), {fast_s:.2} s, decoded {:.2} GB/s",
            files.len(),
            size(&fast),
            size(&fast) as f64 / raw as f64,
            decode(&fast)
        );
        let mut tables = Tables::default();
        for attempts in [8, 24, 64] {
            let t = std::time::Instant::now();
            let hc: Vec<Vec<u8>> = files
                .iter()
                .map(|f| compress_with(f, &mut tables, attempts))
                .collect();
            let s = t.elapsed().as_secs_f64();
            println!(
                "attempts {attempts}: {} ({:.3}), {s:.2} s, decoded {:.2} GB/s",
                size(&hc),
                size(&hc) as f64 / raw as f64,
                decode(&hc)
            );
        }
    }

    proptest! {
        #[test]
        fn any_bytes_round_trip(src in proptest::collection::vec(0u8..4, 0..3000)) {
            round_trip(&src);
        }

        #[test]
        fn the_resumable_decoder_reads_it(src in proptest::collection::vec(0u8..3, 0..2000)) {
            let packed = compress(&src, &mut Tables::default());
            let mut out = Vec::new();
            crate::trigram::lz4::decompress_into(&packed, src.len(), &mut out).expect("decodes");
            prop_assert_eq!(out, src);
        }
    }
}
