//! Python bindings for weighted RRF fusion.

use std::collections::HashMap;

use pyo3::prelude::*;

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
#[pyfunction]
#[pyo3(signature = (lists, centrality, k, limit))]
fn fuse(
    py: Python<'_>,
    lists: Vec<(f64, Vec<(String, String)>)>,
    centrality: HashMap<String, f64>,
    k: f64,
    limit: usize,
) -> PyResult<Vec<FusedTuple>> {
    if !k.is_finite() || k < 0.0 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "k must be a finite number >= 0, got {k}"
        )));
    }
    let lists: Vec<RankedList> = lists
        .into_iter()
        .map(|(weight, items)| RankedList { weight, items })
        .collect();
    let fused = py.detach(|| fusion::fuse(&lists, &centrality, k, limit));
    Ok(fused
        .into_iter()
        .map(|f| {
            (
                f.key,
                f.path,
                f.score,
                f.boost,
                f.demoted,
                f.contributions
                    .into_iter()
                    .map(|c| (c.list, c.rank, c.contribution))
                    .collect(),
                f.folded,
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
