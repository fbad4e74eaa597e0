//! Trigrams: three bytes, ASCII case-folded, packed into the low 24 bits of a `u32`.
//!
//! Folding ASCII case at index time lets one index answer case-sensitive and
//! case-insensitive queries alike (verification restores exactness); non-ASCII bytes are kept
//! as they are, and the query planner expands their case variants instead.

/// Fold one byte: ASCII upper case to lower case, everything else unchanged.
#[inline]
pub fn fold(b: u8) -> u8 {
    b.to_ascii_lowercase()
}

/// Pack three bytes (folded) into a trigram.
#[inline]
pub fn pack(a: u8, b: u8, c: u8) -> u32 {
    (u32::from(fold(a)) << 16) | (u32::from(fold(b)) << 8) | u32::from(fold(c))
}

/// The distinct trigrams of `bytes`, sorted, written into `out` (cleared first).
pub fn distinct_trigrams(bytes: &[u8], out: &mut Vec<u32>) {
    out.clear();
    if bytes.len() < 3 {
        return;
    }
    out.reserve(bytes.len() - 2);
    let mut t = pack(0, bytes[0], bytes[1]);
    for &b in &bytes[2..] {
        t = ((t << 8) | u32::from(fold(b))) & 0x00FF_FFFF;
        out.push(t);
    }
    out.sort_unstable();
    out.dedup();
}

/// The follow-mask bit of the (folded) byte that comes after a trigram: one of eight, from
/// the byte's low bits mixed with its middle ones so that letters, digits and punctuation
/// spread over all eight.
#[inline]
pub fn follow_bit(b: u8) -> u8 {
    let b = fold(b);
    1 << ((b ^ (b >> 3)) & 7)
}

/// An 8-bit follow mask folded to the 4 bits stored per posting (bit k or bit k + 4).
#[inline]
pub fn fold_mask(m: u8) -> u8 {
    (m | (m >> 4)) & 0x0F
}

/// The bit of a (folded, packed) trigram in a block filter of `bits` bits (one hash:
/// multiplicative, the high half scaled to the range).
#[inline]
pub fn filter_bit(t: u32, bits: usize) -> usize {
    let h = t.wrapping_mul(0x9E37_79B1) ^ (t >> 11);
    let h = h.wrapping_mul(0x85EB_CA6B);
    ((u64::from(h) * bits as u64) >> 32) as usize
}

/// Append the block filters of `bytes` to `out` (see `format::SEC_BLOCKS`): for each block
/// of [`super::format::BLOCK`] bytes, [`super::format::BLOCK_FILTER_BYTES`] bytes with the
/// [`filter_bit`] of every trigram starting in the block or in the next
/// [`super::format::BLOCK_OVERLAP`] bytes set.
pub fn block_filters(bytes: &[u8], out: &mut Vec<u8>) {
    use super::format::{BLOCK, BLOCK_FILTER_BYTES, BLOCK_OVERLAP};
    const BITS: usize = BLOCK_FILTER_BYTES * 8;
    let mut words = [0u64; BLOCK_FILTER_BYTES / 8];
    for start in (0..bytes.len()).step_by(BLOCK) {
        words.fill(0);
        let end = (start + BLOCK + BLOCK_OVERLAP).min(bytes.len());
        let part = &bytes[start..end];
        if part.len() >= 3 {
            let mut t = pack(0, part[0], part[1]);
            for &b in &part[2..] {
                t = ((t << 8) | u32::from(fold(b))) & 0x00FF_FFFF;
                let bit = filter_bit(t, BITS);
                words[(bit >> 6) % (BLOCK_FILTER_BYTES / 8)] |= 1 << (bit & 63);
            }
        }
        // Byte order: bit `b` is bit `b % 8` of byte `b / 8` (little-endian words).
        for w in &words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
}

/// A reusable table (2^24 bytes) for collecting one file's distinct trigrams with their
/// follow masks without sorting: sorting every position's trigram was half the build's time.
pub struct TrigramSet {
    masks: Vec<u8>,
}

impl Default for TrigramSet {
    fn default() -> Self {
        Self::new()
    }
}

impl TrigramSet {
    pub fn new() -> Self {
        Self {
            masks: vec![0; 1 << 24],
        }
    }

    /// The distinct trigrams of `bytes` in order of first occurrence, each packed as
    /// `trigram << 8 | follow mask` (the OR of [`follow_bit`] of every byte that follows the
    /// trigram in the file; 0 when it only ends the file), into `out` (cleared first).
    /// The table is left empty again for the next file.
    pub fn distinct(&mut self, bytes: &[u8], out: &mut Vec<u32>) {
        out.clear();
        if bytes.len() < 3 {
            return;
        }
        let mut t = pack(bytes[0], bytes[1], bytes[2]);
        for &b in &bytes[3..] {
            // `t` < 2^24 = masks.len().
            let m = &mut self.masks[t as usize];
            if *m == 0 {
                out.push(t);
            }
            *m |= FOLLOW[b as usize];
            t = ((t << 8) | u32::from(FOLD[b as usize])) & 0x00FF_FFFF;
        }
        if self.masks[t as usize] == 0 {
            out.push(t); // the last trigram, seen only at the end of the file
        }
        for x in out.iter_mut() {
            let m = &mut self.masks[*x as usize];
            *x = (*x << 8) | u32::from(*m);
            *m = 0;
        }
    }
}

/// [`follow_bit`] as a table.
static FOLLOW: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = (i as u8).to_ascii_lowercase();
        table[i] = 1 << ((b ^ (b >> 3)) & 7);
        i += 1;
    }
    table
};

/// ASCII case folding as a table (one load per byte in the build's inner loop).
static FOLD: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = (i as u8).to_ascii_lowercase();
        i += 1;
    }
    table
};

/// The (folded) trigrams of one literal string, in order, possibly repeated.
pub fn literal_trigrams(s: &[u8]) -> Vec<u32> {
    s.windows(3).map(|w| pack(w[0], w[1], w[2])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_equals_windows() {
        let text = b"Hello, World! hello again";
        let mut got = Vec::new();
        distinct_trigrams(text, &mut got);
        let mut want = literal_trigrams(text);
        want.sort_unstable();
        want.dedup();
        assert_eq!(got, want);
        assert!(got.contains(&pack(b'h', b'e', b'l')));
        assert_eq!(pack(b'H', b'E', b'L'), pack(b'h', b'e', b'l'));
    }

    #[test]
    fn set_equals_sorted_dedup_with_follow_masks() {
        let text = b"Hello, World! hello again, HELLO world";
        let mut set = TrigramSet::new();
        let mut got = Vec::new();
        for _ in 0..2 {
            set.distinct(text, &mut got);
            let mut tris: Vec<u32> = got.iter().map(|x| x >> 8).collect();
            tris.sort_unstable();
            let mut want = Vec::new();
            distinct_trigrams(text, &mut want);
            assert_eq!(tris, want);
            for &x in &got {
                let (t, m) = (x >> 8, (x & 0xFF) as u8);
                let mut expect = 0u8;
                for w in text.windows(4) {
                    if pack(w[0], w[1], w[2]) == t {
                        expect |= follow_bit(w[3]);
                    }
                }
                assert_eq!(m, expect, "trigram {t:06x}");
            }
        }
        // "rld" is followed by "!" once and ends the file once: only the "!" bit.
        assert!(got.contains(&(pack(b'r', b'l', b'd') << 8 | u32::from(follow_bit(b'!')))));
        set.distinct(b"ab", &mut got);
        assert!(got.is_empty());
        set.distinct(b"abc", &mut got);
        assert_eq!(got, vec![pack(b'a', b'b', b'c') << 8]);
        set.distinct(b"xyz", &mut got);
        assert!(set.masks.iter().all(|&m| m == 0));
    }

    #[test]
    fn short_input_has_no_trigrams() {
        let mut got = vec![1];
        distinct_trigrams(b"ab", &mut got);
        assert!(got.is_empty());
    }

    /// What the block filters cost a build, next to the trigram pass every file gets:
    /// `MAGUYVA_BLOCKS_BENCH=/work/corpora/linux-source-6.1 cargo test --release --lib
    /// block_filter_throughput -- --ignored --nocapture` (files of 64 KiB or more).
    #[test]
    #[ignore]
    fn block_filter_throughput() {
        let Ok(dir) = std::env::var("MAGUYVA_BLOCKS_BENCH") else {
            return;
        };
        let mut files = Vec::new();
        crate::trigram::for_each_file(std::path::Path::new(&dir), |data| {
            let n = data.len() as u32;
            if (crate::trigram::format::BLOCK_MIN_DOC..=1 << 20).contains(&n) {
                files.push(data);
            }
        });
        let raw: usize = files.iter().map(Vec::len).sum();
        let (mut set, mut tris, mut out) = (TrigramSet::new(), Vec::new(), Vec::new());
        let (mut best_tri, mut best_blocks) = (f64::MAX, f64::MAX);
        for _ in 0..5 {
            let t = std::time::Instant::now();
            for f in &files {
                set.distinct(f, &mut tris);
            }
            best_tri = best_tri.min(t.elapsed().as_secs_f64());
            let t = std::time::Instant::now();
            for f in &files {
                out.clear();
                block_filters(f, &mut out);
            }
            best_blocks = best_blocks.min(t.elapsed().as_secs_f64());
        }
        println!(
            "{} files, {:.0} MB: trigram pass {:.2} s ({:.0} MB/s), block filters {:.2} s ({:.0} MB/s)",
            files.len(),
            raw as f64 / 1e6,
            best_tri,
            raw as f64 / 1e6 / best_tri,
            best_blocks,
            raw as f64 / 1e6 / best_blocks
        );
    }
}
