//! Python binding of the per-answer path checks (`crate::confined`): every result's file
//! checked in one call, the GIL released while the `lstat`s run.

use pyo3::prelude::*;

/// `(size, mtime_ns)` or `None` per path; see `maguyva._core.pyi`.
#[pyfunction]
fn lstat_states(
    py: Python<'_>,
    root: std::path::PathBuf,
    paths: Vec<String>,
) -> Vec<Option<(u64, i64)>> {
    py.detach(|| crate::confined::lstat_states(&root, &paths))
}

/// One flag per path; see `maguyva._core.pyi`.
#[pyfunction]
fn plain_paths(py: Python<'_>, below: &str, paths: Vec<String>) -> Vec<bool> {
    py.detach(|| crate::confined::plain_paths(below, &paths))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(lstat_states, m)?)?;
    m.add_function(wrap_pyfunction!(plain_paths, m)?)?;
    Ok(())
}
