//! Posting lists: sorted document ids, delta-encoded as LEB128 varints.

/// Append `v` as a LEB128 varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Decode a delta-varint list of `count` ids into `out` (cleared first). `None` when the
/// bytes are truncated or malformed (the caller reports a corrupt index).
pub fn decode(bytes: &[u8], count: usize, out: &mut Vec<u32>) -> Option<()> {
    out.clear();
    out.reserve(count);
    let mut pos = 0usize;
    let mut prev: u32 = 0;
    for i in 0..count {
        let mut v: u32 = 0;
        let mut shift = 0u32;
        loop {
            let b = *bytes.get(pos)?;
            pos += 1;
            if shift > 28 {
                return None;
            }
            v |= u32::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let id = if i == 0 { v } else { prev.checked_add(v)? };
        out.push(id);
        prev = id;
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
        fn roundtrip(mut ids in proptest::collection::vec(any::<u32>(), 0..200)) {
            ids.sort_unstable();
            ids.dedup();
            let mut bytes = Vec::new();
            let mut prev = 0;
            for (i, &id) in ids.iter().enumerate() {
                put_varint(&mut bytes, if i == 0 { id } else { id - prev });
                prev = id;
            }
            let mut out = Vec::new();
            prop_assert!(decode(&bytes, ids.len(), &mut out).is_some());
            prop_assert_eq!(out, ids);
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
        assert!(decode(&[0x80], 1, &mut out).is_none());
        assert!(decode(&[], 1, &mut out).is_none());
    }
}
