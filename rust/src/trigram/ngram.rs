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
    fn short_input_has_no_trigrams() {
        let mut got = vec![1];
        distinct_trigrams(b"ab", &mut got);
        assert!(got.is_empty());
    }
}
