//! A sorted table of `(key, offset)` pairs stored in groups of [`GROUP`] entries: a
//! directory of fixed-size entries, binary searched, and per group the keys and offsets
//! after its first as varint deltas (trigram index format 7, BM25 postings format 2).
//!
//! ```text
//! directory  ceil(n / GROUP) x DIR_LEN: u64 (first offset << 24 | first key),
//!            u32 (where the group's deltas start, from the end of the directory)
//! deltas     per group, for each entry after its first: key gap, offset gap (LEB128)
//! ```
//!
//! Keys are below 2^24 (a trigram), strictly ascending; offsets below 2^40, ascending. A
//! table entry of the fixed layout was 8 bytes; here an entry costs the directory's share
//! (12 / 32 bytes) and two varints (a key gap of a dense table and a short list's length:
//! one or two bytes each). A lookup decodes at most `GROUP - 1` pairs.

use super::format::{u32_at, u64_at};
use super::postings::{get_varint, put_varint};

/// Entries per group.
pub const GROUP: usize = 32;
/// Bytes per directory entry.
pub const DIR_LEN: usize = 12;
/// Keys are below this.
pub const KEY_LIMIT: u32 = 1 << 24;

/// The table of `entries` (keys strictly ascending and below [`KEY_LIMIT`], offsets
/// ascending and below 2^40); `None` when they are not.
pub fn encode(entries: &[(u32, u64)]) -> Option<Vec<u8>> {
    let groups = entries.len().div_ceil(GROUP);
    let mut dir = Vec::with_capacity(groups * DIR_LEN);
    let mut deltas = Vec::new();
    for (g, group) in entries.chunks(GROUP).enumerate() {
        let (k0, o0) = group[0];
        if k0 >= KEY_LIMIT || o0 >> 40 != 0 {
            return None;
        }
        if g > 0 && entries[g * GROUP - 1].0 >= k0 {
            return None;
        }
        dir.extend_from_slice(&(o0 << 24 | u64::from(k0)).to_le_bytes());
        dir.extend_from_slice(&u32::try_from(deltas.len()).ok()?.to_le_bytes());
        for w in group.windows(2) {
            let ((ka, oa), (kb, ob)) = (w[0], w[1]);
            if kb <= ka || kb >= KEY_LIMIT || ob < oa || ob >> 40 != 0 {
                return None;
            }
            put_varint(&mut deltas, kb - ka);
            put_varint(&mut deltas, u32::try_from(ob - oa).ok()?);
        }
    }
    dir.extend_from_slice(&deltas);
    Some(dir)
}

/// The offset stored for `key` in a table of `n` entries, `None` when the key is absent or
/// the table is damaged where the search reads it.
pub fn find(table: &[u8], n: usize, key: u32) -> Option<u64> {
    find_span(table, n, key).map(|(off, _)| off)
}

/// As [`find`], with the next entry's offset (`None` after the last entry): where the
/// key's data ends when the data is stored in key order.
pub fn find_span(table: &[u8], n: usize, key: u32) -> Option<(u64, Option<u64>)> {
    let groups = n.div_ceil(GROUP);
    let dir_len = groups.checked_mul(DIR_LEN)?;
    let first = |g: usize| u64_at(table, g * DIR_LEN);
    // the last group whose first key is at most `key`
    let (mut lo, mut hi) = (0usize, groups);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if (first(mid)? & 0xFF_FFFF) as u32 <= key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let g = lo.checked_sub(1)?;
    let head = first(g)?;
    let (mut k, mut off) = ((head & 0xFF_FFFF) as u32, head >> 24);
    let body = table.get(dir_len..)?;
    let mut pos = u32_at(table, g * DIR_LEN + 8)? as usize;
    let in_group = (n - g * GROUP).min(GROUP);
    let mut next = |k: u32, off: u64| -> Option<(u32, u64)> {
        let k = k.checked_add(get_varint(body, &mut pos)?)?;
        Some((k, off.checked_add(u64::from(get_varint(body, &mut pos)?))?))
    };
    // (k, off) is the group's entry i - 1
    let mut i = 1;
    while k < key && i < in_group {
        (k, off) = next(k, off)?;
        i += 1;
    }
    if k != key {
        return None;
    }
    let end = if i < in_group {
        Some(next(k, off)?.1)
    } else if g + 1 < groups {
        Some(first(g + 1)? >> 24)
    } else {
        None
    };
    Some((off, end))
}

/// Every `(key, offset)` of a table of `n` entries, in order (`None` when damaged).
pub fn entries(table: &[u8], n: usize) -> Option<Vec<(u32, u64)>> {
    let groups = n.div_ceil(GROUP);
    let body = table.get(groups.checked_mul(DIR_LEN)?..)?;
    let mut out = Vec::with_capacity(n);
    for g in 0..groups {
        let head = u64_at(table, g * DIR_LEN)?;
        let (mut k, mut off) = ((head & 0xFF_FFFF) as u32, head >> 24);
        let mut pos = u32_at(table, g * DIR_LEN + 8)? as usize;
        out.push((k, off));
        for _ in 1..(n - g * GROUP).min(GROUP) {
            k = k.checked_add(get_varint(body, &mut pos)?)?;
            off = off.checked_add(u64::from(get_varint(body, &mut pos)?))?;
            out.push((k, off));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(n: usize) -> Vec<(u32, u64)> {
        (0..n as u32)
            .map(|i| (i * 7 + (i % 5), u64::from(i) * 300 + u64::from(i % 3)))
            .collect()
    }

    #[test]
    fn every_key_is_found_and_no_other() {
        for n in [0, 1, 2, GROUP - 1, GROUP, GROUP + 1, 5 * GROUP + 3] {
            let e = table(n);
            let t = encode(&e).expect("encode");
            for (i, &(k, o)) in e.iter().enumerate() {
                assert_eq!(find(&t, n, k), Some(o), "n {n} key {k}");
                assert_eq!(find_span(&t, n, k), Some((o, e.get(i + 1).map(|x| x.1))));
            }
            let keys: std::collections::HashSet<u32> = e.iter().map(|x| x.0).collect();
            for k in 0..(n as u32 * 7 + 10) {
                if !keys.contains(&k) {
                    assert_eq!(find(&t, n, k), None, "n {n} absent {k}");
                }
            }
            assert_eq!(entries(&t, n), Some(e));
        }
    }

    #[test]
    fn unsorted_or_too_wide_entries_are_refused() {
        assert!(encode(&[(3, 0), (3, 1)]).is_none());
        assert!(encode(&[(3, 5), (4, 1)]).is_none());
        assert!(encode(&[(KEY_LIMIT, 0)]).is_none());
        assert!(encode(&[(1, 1 << 40)]).is_none());
    }

    #[test]
    fn a_cut_table_finds_nothing_past_the_cut_and_never_panics() {
        let e = table(3 * GROUP);
        let t = encode(&e).expect("encode");
        for cut in 0..t.len() {
            for &(k, o) in &e {
                if let Some(got) = find(&t[..cut], e.len(), k) {
                    assert_eq!(got, o);
                }
            }
        }
    }
}
