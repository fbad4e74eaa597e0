//! Binding of `graph::names` (`maguyva.modalities.graph.store`, `.query`): a CRC-32 over any
//! array (the format 3 checksum, written and verified), the name hash and the name lookup
//! tables built from the packed name blob. Converts arrays and releases the GIL; the work and
//! its errors are the core's.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::errors::to_py;
use crate::graph::names;

/// `name_hash(data: bytes) -> int`: the lookup hash of one UTF-8 name.
#[pyfunction]
fn name_hash(data: &[u8]) -> u64 {
    names::name_hash(data)
}

pub(crate) fn contiguous<'a, T: numpy::Element>(
    arr: &'a PyReadonlyArray1<'_, T>,
    what: &str,
) -> PyResult<&'a [T]> {
    arr.as_slice()
        .map_err(|_| PyValueError::new_err(format!("{what} must be a contiguous 1-d array")))
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
    let found = py.detach(|| names::non_ascii_strings(b, off, ns));
    Ok(found.map_err(to_py)?.into_pyarray(py))
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
/// node ids) of a packed table, each sorted by (hash, node). The lowercased hash of string
/// `nodes[i]` is that of its ASCII-lowercased bytes, or `fix_hash[j]` when `i == fix_at[j]`:
/// the caller gives it for every non-ASCII string (`non_ascii_strings`), from `str.lower`.
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
    let built = py.detach(|| names::name_lookup(b, off, ns, at, fixed));
    let ((eh, en), (lh, ln)) = built.map_err(to_py)?;
    Ok((
        eh.into_pyarray(py),
        en.into_pyarray(py),
        lh.into_pyarray(py),
        ln.into_pyarray(py),
    ))
}

/// `crc32_buffer(data, initial=0) -> int`: the CRC-32 (IEEE, equal to `zlib.crc32`) of a
/// contiguous uint8 array, continuing from `initial`.
#[pyfunction]
#[pyo3(signature = (data, initial = 0))]
fn crc32_buffer(py: Python<'_>, data: PyReadonlyArray1<'_, u8>, initial: u32) -> PyResult<u32> {
    let d = contiguous(&data, "data")?;
    Ok(py.detach(|| names::crc32(d, initial)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(name_hash, m)?)?;
    m.add_function(wrap_pyfunction!(non_ascii_strings, m)?)?;
    m.add_function(wrap_pyfunction!(name_lookup, m)?)?;
    m.add_function(wrap_pyfunction!(crc32_buffer, m)?)?;
    Ok(())
}
