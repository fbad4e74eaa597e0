//! The scalar reference: the definition every SIMD kernel is tested against.

/// Hamming distance between two equally long packed codes, one byte at a time.
///
/// Deliberately the simplest possible form: it is the oracle, not a fast path.
pub fn distance(a: &[u8], b: &[u8]) -> u32 {
    debug_assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Distances from `query` to each row of `rows` (row-major, `query.len()` bytes per row).
pub fn distances(query: &[u8], rows: &[u8], out: &mut [u32]) {
    let width = query.len();
    for (row, slot) in rows.chunks_exact(width).zip(out.iter_mut()) {
        *slot = distance(query, row);
    }
}

/// Distances with 64-bit words and `count_ones` (what plain `popcnt` gives), bytes for the tail.
pub fn distances_words(query: &[u8], rows: &[u8], out: &mut [u32]) {
    let width = query.len();
    let words = width / 8;
    let mut qw = Vec::with_capacity(words);
    for chunk in query.chunks_exact(8) {
        qw.push(u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])));
    }
    let tail = &query[words * 8..];
    for (row, slot) in rows.chunks_exact(width).zip(out.iter_mut()) {
        let mut d = 0u32;
        for (q, chunk) in qw.iter().zip(row.chunks_exact(8)) {
            d += (q ^ u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]))).count_ones();
        }
        d += distance(tail, &row[words * 8..]);
        *slot = d;
    }
}
