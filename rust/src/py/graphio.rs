//! The graph files' hot paths (`maguyva.graph.store`, `maguyva.graph.query`): a CRC-32 over
//! any array (the format 3 checksum, written and verified), and the name lookup tables
//! (64-bit hashes of node names, sorted) built from the packed name blob. All run with the
//! GIL released.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// The 64-bit name hash of the graph's lookup sections (format 3). Part of the file format:
/// never change it without a new format version. 8-byte little-endian words (the last one
/// zero-padded) folded with a multiply-xorshift, seeded with the length, finished with the
/// splitmix64 mixer.
pub fn name_hash_bytes(data: &[u8]) -> u64 {
    hash_words(data, false)
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

/// `name_hash(data: bytes) -> int`: the lookup hash of one UTF-8 name.
#[pyfunction]
fn name_hash(data: &[u8]) -> u64 {
    name_hash_bytes(data)
}

pub(crate) fn contiguous<'a, T: numpy::Element>(
    arr: &'a PyReadonlyArray1<'_, T>,
    what: &str,
) -> PyResult<&'a [T]> {
    arr.as_slice()
        .map_err(|_| PyValueError::new_err(format!("{what} must be a contiguous 1-d array")))
}

/// String `n` of a packed table (UTF-8 `blob`, int64 `offsets`), checked.
fn string_of<'a>(b: &'a [u8], off: &[i64], n: i64) -> Result<&'a [u8], String> {
    let i = usize::try_from(n).map_err(|_| format!("node {n} out of range"))?;
    if i + 1 >= off.len() {
        return Err(format!("node {n} out of range"));
    }
    let (lo, hi) = (off[i], off[i + 1]);
    if lo < 0 || hi < lo || hi as usize > b.len() {
        return Err(format!("bad offsets for string {n}"));
    }
    Ok(&b[lo as usize..hi as usize])
}

/// `non_ascii_strings(blob, offsets, nodes) -> positions`: the positions i (int64, ascending)
/// whose string `nodes[i]` of the packed table is not ASCII.
#[pyfunction]
fn non_ascii_strings<'py>(
    py: Python<'py>,
    blob: PyReadonlyArray1<'py, u8>,
    offsets: PyReadonlyArray1<'py, i64>,
    nodes: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let (b, off, ns) = (
        contiguous(&blob, "blob")?,
        contiguous(&offsets, "offsets")?,
        contiguous(&nodes, "nodes")?,
    );
    let found = py.detach(|| -> Result<Vec<i64>, String> {
        let mut out = Vec::new();
        for (i, &n) in ns.iter().enumerate() {
            if !string_of(b, off, n)?.is_ascii() {
                out.push(i as i64);
            }
        }
        Ok(out)
    });
    Ok(found.map_err(PyValueError::new_err)?.into_pyarray(py))
}

/// Four numpy arrays returned together.
type Lookup<'py> = PyResult<(
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i32>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i32>>,
)>;

/// `name_lookup(blob, offsets, nodes, fix_at, fix_hash) -> (name hashes, their nodes, lower
/// hashes, their nodes)`: the graph's name lookup sections for the strings `nodes` (ascending
/// node ids) of a packed table. Each hash list is sorted by (hash, node), so nodes with equal
/// hashes stay in ascending order. The lowercased hash of string `nodes[i]` is that of its
/// ASCII-lowercased bytes, or `fix_hash[j]` when `i == fix_at[j]`: the caller gives it for
/// every non-ASCII string (`non_ascii_strings`), from Python's `str.lower`.
#[pyfunction]
fn name_lookup<'py>(
    py: Python<'py>,
    blob: PyReadonlyArray1<'py, u8>,
    offsets: PyReadonlyArray1<'py, i64>,
    nodes: PyReadonlyArray1<'py, i64>,
    fix_at: PyReadonlyArray1<'py, i64>,
    fix_hash: PyReadonlyArray1<'py, u64>,
) -> Lookup<'py> {
    let (b, off, ns) = (
        contiguous(&blob, "blob")?,
        contiguous(&offsets, "offsets")?,
        contiguous(&nodes, "nodes")?,
    );
    let (at, fixed) = (
        contiguous(&fix_at, "fix_at")?,
        contiguous(&fix_hash, "fix_hash")?,
    );
    if at.len() != fixed.len() {
        return Err(PyValueError::new_err(
            "fix_at and fix_hash differ in length",
        ));
    }
    if ns.iter().any(|&n| n < 0 || n > i64::from(i32::MAX)) {
        return Err(PyValueError::new_err("a node id is out of the int32 range"));
    }
    let built = py.detach(|| -> Result<_, String> {
        let mut exact = Vec::with_capacity(ns.len());
        let mut lower = Vec::with_capacity(ns.len());
        for &n in ns {
            let s = string_of(b, off, n)?;
            exact.push((hash_words(s, false), n as i32));
            lower.push((hash_words(s, true), n as i32));
        }
        for (&i, &h) in at.iter().zip(fixed) {
            let slot = usize::try_from(i)
                .ok()
                .and_then(|i| lower.get_mut(i))
                .ok_or_else(|| format!("fix position {i} out of range"))?;
            slot.0 = h;
        }
        // `nodes` ascend, and the sort by hash is stable: equal hashes keep ascending nodes
        let (exact, lower) = rayon::join(|| sort_by_hash(exact), || sort_by_hash(lower));
        Ok((exact.0, exact.1, lower.0, lower.1))
    });
    let (eh, en, lh, ln) = built.map_err(PyValueError::new_err)?;
    Ok((
        eh.into_pyarray(py),
        en.into_pyarray(py),
        lh.into_pyarray(py),
        ln.into_pyarray(py),
    ))
}

/// Sort (hash, node) pairs by hash, stably (equal hashes keep their order), and split them
/// into the two columns: one scatter into 256 buckets by the hash's top byte (256 write
/// streams stay in the cache, where a scatter into ~n buckets or a whole-array sort of 200k
/// pairs misses it at nearly every write), then a stable sort of each bucket (~1/256 of the
/// pairs: it fits the cache).
fn sort_by_hash(items: Vec<(u64, i32)>) -> (Vec<u64>, Vec<i32>) {
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

/// `crc32_buffer(data, initial=0) -> int`: the CRC-32 (IEEE, equal to `zlib.crc32`) of a
/// contiguous uint8 array, continuing from `initial`.
#[pyfunction]
#[pyo3(signature = (data, initial = 0))]
fn crc32_buffer(py: Python<'_>, data: PyReadonlyArray1<'_, u8>, initial: u32) -> PyResult<u32> {
    let d = contiguous(&data, "data")?;
    Ok(py.detach(|| {
        let mut hasher = crc32fast::Hasher::new_with_initial(initial);
        hasher.update(d);
        hasher.finalize()
    }))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(name_hash, m)?)?;
    m.add_function(wrap_pyfunction!(non_ascii_strings, m)?)?;
    m.add_function(wrap_pyfunction!(name_lookup, m)?)?;
    m.add_function(wrap_pyfunction!(crc32_buffer, m)?)?;
    Ok(())
}
