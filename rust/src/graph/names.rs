//! The graph's name lookup sections (`maguyva.modalities.graph.store`, format 3): a 64-bit hash
//! of each node name, and of its ASCII-lowercased bytes, sorted with the node ids.

use crate::error::{CoreError, CoreResult};

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// The 64-bit name hash of the graph's lookup sections (format 3). Part of the file format:
/// never change it without a new format version. 8-byte little-endian words (the last one
/// zero-padded) folded with a multiply-xorshift, seeded with the length, finished with the
/// splitmix64 mixer.
pub fn name_hash(data: &[u8]) -> u64 {
    hash_words(data, false)
}

/// The name hash of the ASCII-lowercased bytes of `data` (other bytes kept).
pub fn lower_name_hash(data: &[u8]) -> u64 {
    hash_words(data, true)
}

/// ASCII capitals of a little-endian word made lowercase, the other bytes kept (SWAR: a byte
/// b gets 0x20 added when 'A' <= b <= 'Z'), as `u8::to_ascii_lowercase` does byte by byte.
fn lower_word(v: u64) -> u64 {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let seven = v & LOW7;
    let at_least_a = seven + 0x3F3F_3F3F_3F3F_3F3F; // high bit: low 7 bits >= 0x41
    let above_z = seven + 0x2525_2525_2525_2525; // high bit: low 7 bits >= 0x5B
    v | ((at_least_a & !above_z & !v & HIGH) >> 2)
}

/// The name hash of `data`, or (`lower`) of its ASCII-lowercased bytes.
fn hash_words(data: &[u8], lower: bool) -> u64 {
    let word = |v: u64| if lower { lower_word(v) } else { v };
    let mut h = (data.len() as u64).wrapping_mul(K) ^ 0x6A09_E667_F3BC_C908;
    let mut words = data.chunks_exact(8);
    for w in words.by_ref() {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        h = (h ^ word(v)).wrapping_mul(K);
        h ^= h >> 29;
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h ^ word(u64::from_le_bytes(last))).wrapping_mul(K);
        h ^= h >> 29;
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

fn invalid(msg: String) -> CoreError {
    CoreError::InvalidArgument(msg)
}

/// String `n` of a packed table (UTF-8 `blob`, int64 `offsets`), checked.
pub fn string_of<'a>(blob: &'a [u8], offsets: &[i64], n: i64) -> CoreResult<&'a [u8]> {
    let i = usize::try_from(n).map_err(|_| invalid(format!("node {n} out of range")))?;
    if i + 1 >= offsets.len() {
        return Err(invalid(format!("node {n} out of range")));
    }
    let (lo, hi) = (offsets[i], offsets[i + 1]);
    if lo < 0 || hi < lo || hi as usize > blob.len() {
        return Err(invalid(format!("bad offsets for string {n}")));
    }
    Ok(&blob[lo as usize..hi as usize])
}

/// The positions i (ascending) whose string `nodes[i]` of the packed table is not ASCII.
pub fn non_ascii_strings(blob: &[u8], offsets: &[i64], nodes: &[i64]) -> CoreResult<Vec<i64>> {
    let mut out = Vec::new();
    for (i, &n) in nodes.iter().enumerate() {
        if !string_of(blob, offsets, n)?.is_ascii() {
            out.push(i as i64);
        }
    }
    Ok(out)
}

/// The two lookup sections, each as (sorted hashes, their nodes): exact names, lowercased.
pub type Lookup = ((Vec<u64>, Vec<i32>), (Vec<u64>, Vec<i32>));

/// The graph's name lookup sections for the strings `nodes` (ascending node ids) of a packed
/// table. Each hash list is sorted by (hash, node), so nodes with equal hashes stay in
/// ascending order. The lowercased hash of string `nodes[i]` is that of its ASCII-lowercased
/// bytes, or `fix_hash[j]` when `i == fix_at[j]`: the caller gives it for every non-ASCII
/// string (`non_ascii_strings`), from a full Unicode lowercasing.
pub fn name_lookup(
    blob: &[u8],
    offsets: &[i64],
    nodes: &[i64],
    fix_at: &[i64],
    fix_hash: &[u64],
) -> CoreResult<Lookup> {
    if fix_at.len() != fix_hash.len() {
        return Err(invalid("fix_at and fix_hash differ in length".into()));
    }
    if nodes.iter().any(|&n| n < 0 || n > i64::from(i32::MAX)) {
        return Err(invalid("a node id is out of the int32 range".into()));
    }
    let mut exact = Vec::with_capacity(nodes.len());
    let mut lower = Vec::with_capacity(nodes.len());
    for &n in nodes {
        let s = string_of(blob, offsets, n)?;
        exact.push((hash_words(s, false), n as i32));
        lower.push((hash_words(s, true), n as i32));
    }
    for (&i, &h) in fix_at.iter().zip(fix_hash) {
        let slot = usize::try_from(i)
            .ok()
            .and_then(|i| lower.get_mut(i))
            .ok_or_else(|| invalid(format!("fix position {i} out of range")))?;
        slot.0 = h;
    }
    // `nodes` ascend, and the sort by hash is stable: equal hashes keep ascending nodes
    Ok(rayon::join(|| sort_by_hash(exact), || sort_by_hash(lower)))
}

/// Sort (hash, node) pairs by hash, stably (equal hashes keep their order), and split them
/// into the two columns: one scatter into 256 buckets by the hash's top byte (256 write
/// streams stay in the cache, where a scatter into ~n buckets or a whole-array sort of 200k
/// pairs misses it at nearly every write), then a stable sort of each bucket (~1/256 of the
/// pairs: it fits the cache).
pub fn sort_by_hash(items: Vec<(u64, i32)>) -> (Vec<u64>, Vec<i32>) {
    let mut starts = [0usize; 257];
    for &(h, _) in &items {
        starts[(h >> 56) as usize + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut cursor = starts;
    let mut out = vec![(0u64, 0i32); items.len()];
    for item in items {
        let bucket = (item.0 >> 56) as usize;
        out[cursor[bucket]] = item;
        cursor[bucket] += 1;
    }
    for w in starts.windows(2) {
        out[w[0]..w[1]].sort_by_key(|p| p.0);
    }
    out.into_iter().unzip()
}

/// The CRC-32 (IEEE, equal to `zlib.crc32`) of `data`, continuing from `initial`: the graph
/// files' format 3 checksum.
pub fn crc32(data: &[u8], initial: u32) -> u32 {
    let mut hasher = crc32fast::Hasher::new_with_initial(initial);
    hasher.update(data);
    hasher.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packed table of `names`: (blob, offsets).
    fn table(names: &[&str]) -> (Vec<u8>, Vec<i64>) {
        let mut blob = Vec::new();
        let mut offsets = vec![0i64];
        for n in names {
            blob.extend_from_slice(n.as_bytes());
            offsets.push(blob.len() as i64);
        }
        (blob, offsets)
    }

    #[test]
    fn the_hash_is_the_format_3_hash() {
        // Values written by indexes of format 3 (computed by the binding before this module
        // moved out of `py/`): a change here breaks every existing graph's name lookup.
        assert_eq!(name_hash(b""), PINNED[0]);
        assert_eq!(name_hash(b"load_items"), PINNED[1]);
        assert_eq!(name_hash(b"json.decoder.JSONDecoder.raw_decode"), PINNED[2]);
        assert_eq!(lower_name_hash(b"JSONDecoder"), name_hash(b"jsondecoder"));
    }

    const PINNED: [u64; 3] = [
        0x492B_8D60_66C0_9227,
        0x7A6A_52F6_85FB_F423,
        0xF983_2302_BD6D_65A3,
    ];

    #[test]
    fn lower_word_lowercases_exactly_the_ascii_capitals() {
        for b in 0..=255u8 {
            for pos in 0..8 {
                let v =
                    (u64::from(b) << (8 * pos)) | (0x4161_7A5A_0040_5B60 & !(0xFF << (8 * pos)));
                let want = u64::from_le_bytes(v.to_le_bytes().map(|x| x.to_ascii_lowercase()));
                assert_eq!(lower_word(v), want, "byte {b:#x} at {pos}");
            }
        }
    }

    #[test]
    fn lookup_sorts_by_hash_and_keeps_equal_hashes_in_node_order() {
        let (blob, off) = table(&["Alpha", "alpha", "beta", "ALPHA", "Größe"]);
        let nodes = [0i64, 1, 2, 3, 4];
        let fix = lower_name_hash("größe".as_bytes());
        let ((eh, en), (lh, ln)) = name_lookup(&blob, &off, &nodes, &[4], &[fix]).unwrap();
        assert!(eh.windows(2).all(|w| w[0] <= w[1]));
        assert!(lh.windows(2).all(|w| w[0] <= w[1]));
        let alpha = name_hash(b"alpha");
        let same: Vec<i32> = lh
            .iter()
            .zip(&ln)
            .filter(|(h, _)| **h == alpha)
            .map(|p| *p.1)
            .collect();
        assert_eq!(same, [0, 1, 3]);
        assert_eq!(en.len(), 5);
        assert!(lh.iter().zip(&ln).any(|(h, n)| *h == fix && *n == 4));
        assert_eq!(non_ascii_strings(&blob, &off, &nodes).unwrap(), [4]);
    }

    #[test]
    fn bad_tables_are_invalid_arguments() {
        let (blob, off) = table(&["a", "b"]);
        let bad = |r: CoreResult<Lookup>| matches!(r, Err(CoreError::InvalidArgument(_)));
        assert!(bad(name_lookup(&blob, &off, &[2], &[], &[])));
        assert!(bad(name_lookup(&blob, &off, &[-1], &[], &[])));
        assert!(bad(name_lookup(&blob, &off, &[0], &[0], &[])));
        assert!(bad(name_lookup(&blob, &off, &[0], &[5], &[1])));
        assert!(bad(name_lookup(&blob, &[0, 9, 1], &[0], &[], &[])));
        assert!(string_of(&blob, &off, 1).is_ok());
    }

    #[test]
    fn sort_by_hash_equals_a_stable_sort() {
        let mut x = 0x1234_5678_9ABC_DEF0u64;
        let items: Vec<(u64, i32)> = (0..5000)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (((x % 97) << 56) | (x % 5), i)
            })
            .collect();
        let mut want = items.clone();
        want.sort_by_key(|p| p.0);
        assert_eq!(sort_by_hash(items), want.into_iter().unzip());
    }

    #[test]
    fn crc32_is_zlibs() {
        assert_eq!(crc32(b"123456789", 0), 0xCBF4_3926);
        assert_eq!(crc32(b"6789", crc32(b"12345", 0)), 0xCBF4_3926);
    }
}
