//! Python bindings for weighted RRF fusion.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use super::errors::to_py;

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
#[pyo3(signature = (lists, centrality, k, limit, *, by_file=false))]
fn fuse<'py>(
    lists: Vec<(f64, Bound<'py, PyList>)>,
    centrality: Bound<'py, PyDict>,
    k: f64,
    limit: usize,
    by_file: bool,
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
    let evidence = if by_file {
        fusion::Evidence::File
    } else {
        fusion::Evidence::Chunk
    };
    let fused = fusion::fuse_with(&ranked, &central, k, limit, evidence);
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

/// A 1-d buffer's items, copied (numpy arrays and `array.array` both qualify). An empty one
/// is read without asking for its buffer (an empty `array.array` has no aligned pointer).
fn read<T: pyo3::buffer::Element + Copy>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<T>> {
    if obj.len().is_ok_and(|n| n == 0) {
        return Ok(Vec::new());
    }
    let buffer = PyBuffer::<T>::get(obj).map_err(|e| {
        PyTypeError::new_err(format!(
            "{what} must be a 1-d array of the documented type ({e})"
        ))
    })?;
    if buffer.dimensions() != 1 {
        return Err(PyValueError::new_err(format!("{what} must be a 1-d array")));
    }
    buffer.to_vec(obj.py())
}

fn read_optional<T: pyo3::buffer::Element + Copy>(
    obj: &Option<Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Vec<T>> {
    obj.as_ref().map_or(Ok(Vec::new()), |b| read(b, what))
}

/// The fused results of `fuse_ids` as columns (lists): result `i` is item `items[i]` of file
/// `paths[i]`; its contributions, folded items and member entries are the ranges
/// `*_offsets[i] .. *_offsets[i + 1]` of the flat columns.
#[pyclass(frozen, get_all, module = "maguyva._core")]
#[derive(Default)]
struct FusedIds {
    items: Vec<i64>,
    paths: Vec<i64>,
    scores: Vec<f64>,
    boosts: Vec<f64>,
    demoted: Vec<bool>,
    contribution_offsets: Vec<i64>,
    contribution_lists: Vec<i64>,
    contribution_ranks: Vec<i64>,
    contributions: Vec<f64>,
    folded_offsets: Vec<i64>,
    folded_items: Vec<i64>,
    member_offsets: Vec<i64>,
    member_lists: Vec<i64>,
    member_ranks: Vec<i64>,
}

impl FusedIds {
    fn of(fused: Vec<fusion::FusedId>) -> Self {
        let mut c = FusedIds {
            contribution_offsets: vec![0],
            folded_offsets: vec![0],
            member_offsets: vec![0],
            ..FusedIds::default()
        };
        for f in fused {
            c.items.push(f.item as i64);
            c.paths.push(f.path as i64);
            c.scores.push(f.score);
            c.boosts.push(f.boost);
            c.demoted.push(f.demoted);
            for x in &f.contributions {
                c.contribution_lists.push(x.list as i64);
                c.contribution_ranks.push(x.rank as i64);
                c.contributions.push(x.contribution);
            }
            c.contribution_offsets.push(c.contributions.len() as i64);
            c.folded_items.extend(f.folded.iter().map(|&i| i as i64));
            c.folded_offsets.push(c.folded_items.len() as i64);
            for &(list, rank) in &f.members {
                c.member_lists.push(list as i64);
                c.member_ranks.push(rank as i64);
            }
            c.member_offsets.push(c.member_lists.len() as i64);
        }
        c
    }
}

/// Weighted RRF over numbered items; see `maguyva._core.pyi` for the contract. The lists
/// arrive concatenated (`items`, `paths`, split by `lengths`) as int64 buffers, the names
/// once per item and file; the GIL is released while the core fuses.
#[pyfunction]
#[pyo3(signature = (
    items, paths, lengths, weights, keys, path_names, k, limit,
    *, key_centrality=None, path_centrality=None, demote=None
))]
#[allow(clippy::too_many_arguments)] // the binding's flat arguments are its contract
fn fuse_ids<'py>(
    py: Python<'py>,
    items: Bound<'py, PyAny>,
    paths: Bound<'py, PyAny>,
    lengths: Bound<'py, PyAny>,
    weights: Bound<'py, PyAny>,
    keys: Vec<PyBackedStr>,
    path_names: Vec<PyBackedStr>,
    k: f64,
    limit: usize,
    key_centrality: Option<Bound<'py, PyAny>>,
    path_centrality: Option<Bound<'py, PyAny>>,
    demote: Option<Bound<'py, PyAny>>,
) -> PyResult<FusedIds> {
    if !k.is_finite() || k < 0.0 {
        return Err(PyValueError::new_err(format!(
            "k must be a finite number >= 0, got {k}"
        )));
    }
    let (items, paths) = (read(&items, "items")?, read(&paths, "paths")?);
    let lengths = read(&lengths, "lengths")?;
    let weights = read(&weights, "weights")?;
    let key_centrality = read_optional(&key_centrality, "key_centrality")?;
    let path_centrality = read_optional(&path_centrality, "path_centrality")?;
    let demote: Vec<bool> = read_optional::<u8>(&demote, "demote")?
        .into_iter()
        .map(|d| d != 0)
        .collect();
    let keys: Vec<&str> = keys.iter().map(|s| &**s).collect();
    let path_names: Vec<&str> = path_names.iter().map(|s| &**s).collect();
    let fused = py
        .detach(|| {
            let lists = fusion::split_lists(&items, &paths, &lengths, &weights)?;
            let input = fusion::IdInput {
                lists: &lists,
                keys: &keys,
                paths: &path_names,
                key_centrality: &key_centrality,
                path_centrality: &path_centrality,
                demote: &demote,
            };
            fusion::fuse_ids(&input, k, limit)
        })
        .map_err(to_py)?;
    Ok(FusedIds::of(fused))
}

/// Entries numbered by `number_entries`: entry `j` is key `keys[items[j]]` of file
/// `paths[files[j]]` (`items`, `files`: `array.array("q")`); `keys` and `paths` hold each
/// distinct string once (the caller's own string objects), in order of first appearance.
#[pyclass(frozen, get_all, module = "maguyva._core")]
struct NumberedEntries {
    items: Py<PyAny>,
    files: Py<PyAny>,
    keys: Py<PyList>,
    paths: Py<PyList>,
}

/// An `array.array("q")` of `values`: a buffer numpy need not be imported for.
fn int64_array(py: Python<'_>, values: &[i64]) -> PyResult<Py<PyAny>> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let array = py.import("array")?.getattr("array")?;
    Ok(array.call1(("q", PyBytes::new(py, &bytes)))?.unbind())
}

/// The distinct strings of `list` (by first appearance) and every entry's number.
fn number_list<'py>(
    py: Python<'py>,
    list: &Bound<'py, PyList>,
    what: &str,
) -> PyResult<(Py<PyAny>, Py<PyList>)> {
    let backed: Vec<PyBackedStr> = list
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a list of str")))?;
    let names: Vec<&str> = backed.iter().map(|s| &**s).collect();
    let (ids, first) = fusion::number(&names);
    let distinct = PyList::empty(py);
    for at in first {
        distinct.append(list.get_item(at)?)?;
    }
    Ok((int64_array(py, &ids)?, distinct.unbind()))
}

/// `number_entries(keys, paths)`: number parallel lists of chunk keys and their paths.
#[pyfunction]
fn number_entries<'py>(
    py: Python<'py>,
    keys: Bound<'py, PyList>,
    paths: Bound<'py, PyList>,
) -> PyResult<NumberedEntries> {
    if keys.len() != paths.len() {
        return Err(PyValueError::new_err(format!(
            "{} keys but {} paths",
            keys.len(),
            paths.len()
        )));
    }
    let (items, key_names) = number_list(py, &keys, "keys")?;
    let (files, path_names) = number_list(py, &paths, "paths")?;
    Ok(NumberedEntries {
        items,
        files,
        keys: key_names,
        paths: path_names,
    })
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
    m.add_function(wrap_pyfunction!(fuse_ids, m)?)?;
    m.add_class::<FusedIds>()?;
    m.add_function(wrap_pyfunction!(number_entries, m)?)?;
    m.add_class::<NumberedEntries>()?;
    m.add_function(wrap_pyfunction!(centrality_boost, m)?)?;
    m.add_function(wrap_pyfunction!(is_demoted_path, m)?)?;
    m.add("DEMOTION_FACTOR", fusion::DEMOTION_FACTOR)?;
    Ok(())
}
