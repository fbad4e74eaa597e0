//! Python bindings for the repository walker.

use std::path::PathBuf;

use pyo3::prelude::*;

use crate::py::errors::to_py;
use crate::walk::{self, WalkConfig};

/// Selected files as `(path, size, mtime_ns)` and skipped ones as `(path, reason)`.
type WalkTuple = (Vec<(String, u64, i64)>, Vec<(String, &'static str)>);

/// Walk a repository; see `maguyva._core.pyi` for the contract. Releases the GIL.
#[pyfunction]
#[pyo3(signature = (root, *, max_file_bytes, allow_large, follow_symlinks, max_trigrams, threads=2))]
fn walk_files(
    py: Python<'_>,
    root: PathBuf,
    max_file_bytes: u64,
    allow_large: Vec<String>,
    follow_symlinks: bool,
    max_trigrams: usize,
    threads: usize,
) -> PyResult<WalkTuple> {
    let cfg = WalkConfig {
        max_file_bytes,
        allow_large,
        follow_symlinks,
        max_trigrams,
        threads,
    };
    let out = py.detach(|| walk::walk(&root, &cfg)).map_err(to_py)?;
    Ok((
        out.files
            .into_iter()
            .map(|f| (f.path, f.size, f.mtime_ns))
            .collect(),
        out.skipped
            .into_iter()
            .map(|(p, r)| (p, r.as_str()))
            .collect(),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(walk_files, m)?)?;
    m.add("DEFAULT_MAX_TRIGRAMS", walk::DEFAULT_MAX_TRIGRAMS)?;
    Ok(())
}
