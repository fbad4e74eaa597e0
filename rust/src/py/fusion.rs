//! Python bindings for weighted RRF fusion.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::fusion::{self, RankedList};

/// One fused result as a plain tuple:
/// `(key, path, score, boost, demoted, [(list, rank, contribution)], [folded keys])`.
type FusedTuple = (
    String,
    String,
    f64,
    f64,
    bool,
    Vec<(usize, usize, f64)>,
    Vec<String>,
);

/// Fuse ranked lists with weighted RRF; see `maguyva._core.pyi` for the contract.
///
/// Keys and paths are borrowed from the Python strings (no copies), so the GIL is held for
/// the whole call; fusing thousands of items takes well under a millisecond.
#[pyfunction]
#[pyo3(signature = (lists, centrality, k, limit))]
fn fuse<'py>(
    lists: Vec<(f64, Bound<'py, PyList>)>,
    centrality: Bound<'py, PyDict>,
    k: f64,
    limit: usize,
) -> PyResult<Vec<FusedTuple>> {
    if !k.is_finite() || k < 0.0 {
        return Err(PyValueError::new_err(format!(
            "k must be a finite number >= 0, got {k}"
        )));
    }
    // Keep every item tuple alive while its strings are borrowed.
    let mut tuples: Vec<Vec<Bound<'py, PyTuple>>> = Vec::with_capacity(lists.len());
    for (_, items) in &lists {
        let mut row = Vec::with_capacity(items.len());
        for item in items.iter() {
            let pair = item.cast_into::<PyTuple>().map_err(|_| {
                PyTypeError::new_err("each ranked item must be a (key, path) tuple of str")
            })?;
            if pair.len() != 2 {
                return Err(PyTypeError::new_err(
                    "each ranked item must be a (key, path) tuple of str",
                ));
            }
            row.push(pair);
        }
        tuples.push(row);
    }
    let mut strings: Vec<Vec<(Bound<'py, PyString>, Bound<'py, PyString>)>> =
        Vec::with_capacity(tuples.len());
    for row in &tuples {
        let mut out = Vec::with_capacity(row.len());
        for pair in row {
            let key = pair
                .get_item(0)?
                .cast_into::<PyString>()
                .map_err(|_| PyTypeError::new_err("ranked item keys must be str"))?;
            let path = pair
                .get_item(1)?
                .cast_into::<PyString>()
                .map_err(|_| PyTypeError::new_err("ranked item paths must be str"))?;
            out.push((key, path));
        }
        strings.push(out);
    }
    let mut ranked: Vec<RankedList<'_>> = Vec::with_capacity(strings.len());
    for ((weight, _), row) in lists.iter().zip(&strings) {
        let mut items = Vec::with_capacity(row.len());
        for (key, path) in row {
            items.push((key.to_str()?, path.to_str()?));
        }
        ranked.push(RankedList {
            weight: *weight,
            items,
        });
    }
    let mut central_strings = Vec::with_capacity(centrality.len());
    for (key, value) in centrality.iter() {
        let key = key
            .cast_into::<PyString>()
            .map_err(|_| PyTypeError::new_err("centrality keys must be str"))?;
        central_strings.push((key, value.extract::<f64>()?));
    }
    let mut central: rustc_hash::FxHashMap<&str, f64> = rustc_hash::FxHashMap::default();
    for (key, value) in &central_strings {
        central.insert(key.to_str()?, *value);
    }
    let fused = fusion::fuse(&ranked, &central, k, limit);
    Ok(fused
        .into_iter()
        .map(|f| {
            (
                f.key.to_owned(),
                f.path.to_owned(),
                f.score,
                f.boost,
                f.demoted,
                f.contributions
                    .into_iter()
                    .map(|c| (c.list, c.rank, c.contribution))
                    .collect(),
                f.folded.into_iter().map(str::to_owned).collect(),
            )
        })
        .collect())
}

/// The centrality boost `min(1 + 0.3 ln(1 + c), 1.5)`.
#[pyfunction]
fn centrality_boost(c: f64) -> f64 {
    fusion::boost(c)
}

/// True when a path is vendored, built, archived, minified or generated.
#[pyfunction]
fn is_demoted_path(path: &str) -> bool {
    fusion::is_demoted_path(path)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fuse, m)?)?;
    m.add_function(wrap_pyfunction!(centrality_boost, m)?)?;
    m.add_function(wrap_pyfunction!(is_demoted_path, m)?)?;
    m.add("DEMOTION_FACTOR", fusion::DEMOTION_FACTOR)?;
    Ok(())
}
