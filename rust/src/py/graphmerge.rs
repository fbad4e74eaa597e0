//! Binding of `graph::csr` (`maguyva.modalities.graph.build._csr`, `_conf_rank`): converts
//! arrays and releases the GIL; the counting sorts and their errors are the core's.

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use super::errors::to_py;
use super::graphio::contiguous;
use crate::graph::csr;

/// `conf_ranks(conf, values) -> ranks | None`: each float32 confidence's rank (int64) among
/// the sorted distinct float32 `values`, highest first, or None when one is not among them.
#[pyfunction]
fn conf_ranks<'py>(
    py: Python<'py>,
    conf: PyReadonlyArray1<'py, f32>,
    values: PyReadonlyArray1<'py, f32>,
) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
    let (c, v) = (contiguous(&conf, "conf")?, contiguous(&values, "values")?);
    Ok(py
        .detach(|| csr::conf_rank(c, v))
        .map(|r| r.into_pyarray(py)))
}

/// Pointers and edge numbers, returned together.
type Adjacency<'py> = PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i32>>)>;

/// `csr_by_rank(n, keys, rank, levels) -> (ptr, idx)`: the adjacency of int32 `keys` (each
/// edge's node, below `n`) as int64 pointers and int32 edge numbers, a node's edges by int64
/// `rank` (below `levels`), ties in edge order. ValueError for a node or rank out of range.
#[pyfunction]
fn csr_by_rank<'py>(
    py: Python<'py>,
    n: usize,
    keys: PyReadonlyArray1<'py, i32>,
    rank: PyReadonlyArray1<'py, i64>,
    levels: usize,
) -> Adjacency<'py> {
    let (k, r) = (contiguous(&keys, "keys")?, contiguous(&rank, "rank")?);
    let (ptr, idx) = py.detach(|| csr::csr(n, k, r, levels)).map_err(to_py)?;
    Ok((ptr.into_pyarray(py), idx.into_pyarray(py)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conf_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(csr_by_rank, m)?)?;
    Ok(())
}
