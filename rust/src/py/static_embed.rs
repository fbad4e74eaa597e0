//! Python binding of the static-tier pooling: numpy in, numpy out, GIL released.

use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::errors::to_py;
use crate::static_embed::{self, Table};

fn contiguous<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    array: &'a numpy::PyReadonlyArray<'_, T, D>,
    name: &str,
) -> PyResult<&'a [T]> {
    array
        .as_slice()
        .map_err(|_| PyValueError::new_err(format!("{name} must be a C-contiguous numpy array")))
}

/// Weighted mean of table rows per text; see `maguyva._core.pyi`.
#[pyfunction]
#[pyo3(signature = (table, scales, weights, ids, offsets, *, reference=false))]
fn static_pool<'py>(
    py: Python<'py>,
    table: PyReadonlyArray2<'py, i8>,
    scales: PyReadonlyArray1<'py, f32>,
    weights: PyReadonlyArray1<'py, f32>,
    ids: PyReadonlyArray1<'py, u32>,
    offsets: PyReadonlyArray1<'py, i64>,
    reference: bool,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let dim = table.shape()[1];
    let rows = contiguous(&table, "table")?;
    let scales = contiguous(&scales, "scales")?;
    let weights = contiguous(&weights, "weights")?;
    let ids = contiguous(&ids, "ids")?;
    let offsets = contiguous(&offsets, "offsets")?;
    let n = offsets.len().saturating_sub(1);
    let out = py
        .detach(|| {
            let table = Table::new(rows, dim, scales, weights)?;
            if reference {
                static_embed::pool_scalar(&table, ids, offsets)
            } else {
                static_embed::pool(&table, ids, offsets)
            }
        })
        .map_err(to_py)?;
    PyArray1::from_vec(py, out).reshape([n, dim])
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(static_pool, m)?)?;
    Ok(())
}
