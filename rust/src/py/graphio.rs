//! The graph files' hot paths (`maguyva.graph.store`, `maguyva.graph.query`): a CRC-32 over
//! any array (the format 3 checksum, written and verified), and the name lookup tables
//! (64-bit hashes of node names, sorted) built from the packed name blob. All run with the
//! GIL released.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;

/// Two numpy arrays returned together.
type Arrays<'py, A, B> = PyResult<(Bound<'py, PyArray1<A>>, Bound<'py, PyArray1<B>>)>;

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// The 64-bit name hash of the graph's lookup sections (format 3). Part of the file format:
/// never change it without a new format version. 8-byte little-endian words (the last one
/// zero-padded) folded with a multiply-xorshift, seeded with the length, finished with the
/// splitmix64 mixer.
pub fn name_hash_bytes(data: &[u8]) -> u64 {
    let mut h = (data.len() as u64).wrapping_mul(K) ^ 0x6A09_E667_F3BC_C908;
    let mut words = data.chunks_exact(8);
    for w in words.by_ref() {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        h = (h ^ v).wrapping_mul(K);
        h ^= h >> 29;
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(last)).wrapping_mul(K);
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

fn contiguous<'a, T: numpy::Element>(
    arr: &'a PyReadonlyArray1<'_, T>,
    what: &str,
) -> PyResult<&'a [T]> {
    arr.as_slice()
        .map_err(|_| PyValueError::new_err(format!("{what} must be a contiguous 1-d array")))
}

/// `name_hashes(blob, offsets, nodes, ascii_lower) -> (hashes, non_ascii)`: the hash of string
/// `nodes[i]` of a packed table (UTF-8 `blob`, int64 `offsets`) for every i; with
/// `ascii_lower`, of its ASCII-lowercased bytes. `non_ascii` lists the positions i whose
/// string is not ASCII: under `ascii_lower` their hash is a placeholder the caller replaces
/// (Python's `str.lower` defines the lowercased name, and only ASCII agrees byte for byte).
#[pyfunction]
fn name_hashes<'py>(
    py: Python<'py>,
    blob: PyReadonlyArray1<'py, u8>,
    offsets: PyReadonlyArray1<'py, i64>,
    nodes: PyReadonlyArray1<'py, i64>,
    ascii_lower: bool,
) -> Arrays<'py, u64, i64> {
    let (b, off, ns) = (
        contiguous(&blob, "blob")?,
        contiguous(&offsets, "offsets")?,
        contiguous(&nodes, "nodes")?,
    );
    let hashes = py.detach(|| -> Result<(Vec<u64>, Vec<i64>), String> {
        let slice_of = |n: i64| -> Result<&[u8], String> {
            let i = usize::try_from(n).map_err(|_| format!("node {n} out of range"))?;
            if i + 1 >= off.len() {
                return Err(format!("node {n} out of range"));
            }
            let (lo, hi) = (off[i], off[i + 1]);
            if lo < 0 || hi < lo || hi as usize > b.len() {
                return Err(format!("bad offsets for string {n}"));
            }
            Ok(&b[lo as usize..hi as usize])
        };
        let pairs = ns
            .par_iter()
            .map(|&n| {
                let s = slice_of(n)?;
                let hash = if ascii_lower && s.iter().any(|c| c.is_ascii_uppercase()) {
                    name_hash_bytes(&s.to_ascii_lowercase())
                } else {
                    name_hash_bytes(s)
                };
                Ok((hash, s.is_ascii()))
            })
            .collect::<Result<Vec<(u64, bool)>, String>>()?;
        let non_ascii = (0..pairs.len() as i64)
            .filter(|&i| !pairs[i as usize].1)
            .collect();
        let hashes = pairs.into_iter().map(|(h, _)| h).collect();
        Ok((hashes, non_ascii))
    });
    let (hashes, non_ascii) = hashes.map_err(PyValueError::new_err)?;
    Ok((hashes.into_pyarray(py), non_ascii.into_pyarray(py)))
}

/// `sort_by_hash(hashes, nodes) -> (sorted hashes, nodes in that order)`: sorted by (hash,
/// node), so equal hashes keep their nodes in ascending order.
#[pyfunction]
fn sort_by_hash<'py>(
    py: Python<'py>,
    hashes: PyReadonlyArray1<'py, u64>,
    nodes: PyReadonlyArray1<'py, i64>,
) -> Arrays<'py, u64, i32> {
    let (h, ns) = (contiguous(&hashes, "hashes")?, contiguous(&nodes, "nodes")?);
    if h.len() != ns.len() {
        return Err(PyValueError::new_err("hashes and nodes differ in length"));
    }
    if ns.iter().any(|&n| n < 0 || n > i64::from(i32::MAX)) {
        return Err(PyValueError::new_err("a node id is out of the int32 range"));
    }
    let (sorted, order) = py.detach(|| {
        let mut pairs: Vec<(u64, i32)> = h.iter().zip(ns).map(|(&a, &n)| (a, n as i32)).collect();
        pairs.par_sort_unstable();
        pairs.into_iter().unzip::<u64, i32, Vec<u64>, Vec<i32>>()
    });
    Ok((sorted.into_pyarray(py), order.into_pyarray(py)))
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
    m.add_function(wrap_pyfunction!(name_hashes, m)?)?;
    m.add_function(wrap_pyfunction!(sort_by_hash, m)?)?;
    m.add_function(wrap_pyfunction!(crc32_buffer, m)?)?;
    Ok(())
}
