//! Posting lists: sorted document ids, delta-encoded, then bit-packed in blocks of 128
//! (frame of reference, as Lucene does): each block is one byte giving the bit width `w`
//! of its largest value, then its values in `w` bits each, little-endian (the last block
//! holds the rest). Gaps after the first id are stored minus one (ids are distinct).
//! A list whose gaps are irregular (most rare trigrams) is smaller as LEB128 varints: it is
//! then stored as the marker byte [`VARINT_LIST`] followed by the varint gaps, whichever
//! is smaller.

/// Values per bit-packed block.
pub const BLOCK: usize = 128;
/// First byte of a list stored as varints (a block width is at most 32).
pub const VARINT_LIST: u8 = 0xFF;

/// Append `v` as a LEB128 varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Read a LEB128 varint at `*pos`; `None` when truncated or longer than 32 bits.
#[inline]
pub fn get_varint(bytes: &[u8], pos: &mut usize) -> Option<u32> {
    let mut v: u32 = 0;
    let mut shift = 0u32;
    loop {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        if shift > 28 {
            return None;
        }
        v |= u32::from(b & 0x7F) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
    }
}

fn varint_len(v: u32) -> usize {
    (32 - (v | 1).leading_zeros()).div_ceil(7) as usize
}

/// Append `gaps` to `out`, bit-packed or as varints, whichever is smaller.
pub fn encode_gaps(gaps: &[u32], out: &mut Vec<u8>) {
    let packed: usize = gaps
        .chunks(BLOCK)
        .map(|b| {
            let w = 32 - b.iter().copied().max().unwrap_or(0).leading_zeros() as usize;
            1 + (b.len() * w).div_ceil(8)
        })
        .sum();
    let varints: usize = 1 + gaps.iter().map(|&v| varint_len(v)).sum::<usize>();
    if varints < packed {
        out.push(VARINT_LIST);
        for &v in gaps {
            put_varint(out, v);
        }
        return;
    }
    for block in gaps.chunks(BLOCK) {
        let max = block.iter().copied().max().unwrap_or(0);
        let w = 32 - max.leading_zeros();
        out.push(w as u8);
        if w == 0 {
            continue;
        }
        let mut acc: u64 = 0;
        let mut bits = 0u32;
        for &v in block {
            acc |= u64::from(v) << bits;
            bits += w;
            while bits >= 8 {
                out.push(acc as u8);
                acc >>= 8;
                bits -= 8;
            }
        }
        if bits > 0 {
            out.push(acc as u8);
        }
    }
}

/// Append the packed form of sorted, distinct `ids` to `out`.
pub fn encode(ids: &[u32], out: &mut Vec<u8>) {
    let mut gaps = Vec::with_capacity(ids.len());
    let mut prev = 0u32;
    for (i, &id) in ids.iter().enumerate() {
        gaps.push(if i == 0 { id } else { id - prev - 1 });
        prev = id;
    }
    encode_gaps(&gaps, out);
}

/// Decode `count` ids packed by [`encode`] into `out` (cleared first). `None` when the
/// bytes are truncated or malformed (the caller reports a corrupt index).
pub fn decode(bytes: &[u8], count: usize, out: &mut Vec<u32>) -> Option<()> {
    out.clear();
    out.reserve(count);
    let mut pos = 0usize;
    let mut prev: u32 = 0;
    if count > 0 && bytes.first() == Some(&VARINT_LIST) {
        pos = 1;
        for i in 0..count {
            let v = get_varint(bytes, &mut pos)?;
            let id = if i == 0 {
                v
            } else {
                prev.checked_add(v)?.checked_add(1)?
            };
            out.push(id);
            prev = id;
        }
        return Some(());
    }
    let mut left = count;
    while left > 0 {
        let n = left.min(BLOCK);
        let w = u32::from(*bytes.get(pos)?);
        pos += 1;
        if w > 32 {
            return None;
        }
        let len = (n * w as usize).div_ceil(8);
        let block = bytes.get(pos..pos + len)?;
        pos += len;
        let mask: u64 = if w == 32 {
            u64::from(u32::MAX)
        } else {
            (1u64 << w) - 1
        };
        let mut acc: u64 = 0;
        let mut bits = 0u32;
        let mut at = 0usize;
        for _ in 0..n {
            while bits < w {
                acc |= u64::from(block[at]) << bits;
                at += 1;
                bits += 8;
            }
            let v = (acc & mask) as u32;
            acc >>= w;
            bits -= w;
            let id = if out.is_empty() {
                v
            } else {
                prev.checked_add(v)?.checked_add(1)?
            };
            out.push(id);
            prev = id;
        }
        left -= n;
    }
    Some(())
}

/// Intersection of two sorted id lists.
pub fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut out = Vec::with_capacity(small.len());
    let mut j = 0usize;
    for &x in small {
        // Galloping would win for very skewed sizes; a linear merge with a binary-search jump
        // keeps both cases cheap.
        if large.len() - j > 64 * (small.len() + 1) {
            j += large[j..].partition_point(|&y| y < x);
        } else {
            while j < large.len() && large[j] < x {
                j += 1;
            }
        }
        if j < large.len() && large[j] == x {
            out.push(x);
        }
    }
    out
}

/// Union of two sorted id lists.
pub fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn roundtrip(mut ids in proptest::collection::vec(any::<u32>(), 0..600),
                     small in any::<bool>()) {
            if small {
                for id in &mut ids {
                    *id %= 5000;
                }
            }
            ids.sort_unstable();
            ids.dedup();
            let mut bytes = Vec::new();
            encode(&ids, &mut bytes);
            let mut out = Vec::new();
            prop_assert!(decode(&bytes, ids.len(), &mut out).is_some());
            prop_assert_eq!(&out, &ids);
            // Any truncation is refused, never a panic.
            for cut in 0..bytes.len() {
                let _ = decode(&bytes[..cut], ids.len(), &mut out);
            }
        }

        #[test]
        fn set_ops(mut a in proptest::collection::vec(0u32..500, 0..300),
                   mut b in proptest::collection::vec(0u32..500, 0..300)) {
            a.sort_unstable(); a.dedup(); b.sort_unstable(); b.dedup();
            let sa: std::collections::BTreeSet<u32> = a.iter().copied().collect();
            let sb: std::collections::BTreeSet<u32> = b.iter().copied().collect();
            prop_assert_eq!(intersect(&a, &b), sa.intersection(&sb).copied().collect::<Vec<_>>());
            prop_assert_eq!(union(&a, &b), sa.union(&sb).copied().collect::<Vec<_>>());
        }
    }

    #[test]
    fn truncated_is_none() {
        let mut out = Vec::new();
        assert!(decode(&[5], 1, &mut out).is_none());
        assert!(decode(&[], 1, &mut out).is_none());
        assert!(decode(&[33, 0, 0, 0, 0, 0], 1, &mut out).is_none());
        let mut pos = 0;
        assert!(get_varint(&[0x80], &mut pos).is_none());
    }

    #[test]
    fn dense_lists_take_a_bit_per_document() {
        let ids: Vec<u32> = (0..1280).collect();
        let mut bytes = Vec::new();
        encode(&ids, &mut bytes);
        // All gaps are 0 after the first: ten blocks of width 0 (the first holds id 0 too).
        assert_eq!(bytes.len(), 10);
        // Irregular gaps: varints.
        bytes.clear();
        encode(&[3, 100_000, 100_001], &mut bytes);
        assert_eq!(bytes[0], VARINT_LIST);
        let mut out = Vec::new();
        assert!(decode(&bytes, 3, &mut out).is_some());
        assert_eq!(out, vec![3, 100_000, 100_001]);
        let ids: Vec<u32> = (0..1280).map(|i| i * 3).collect();
        bytes.clear();
        encode(&ids, &mut bytes);
        assert_eq!(bytes.len(), 10 * (1 + 128 * 2 / 8));
    }
}
