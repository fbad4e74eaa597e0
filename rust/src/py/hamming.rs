//! Python bindings for the Hamming top-k core: numpy arrays in and out, GIL released for scans.

use std::sync::RwLock;

use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use super::errors::to_py;
use crate::hamming::{search, Codes, HammingIndex, Kernel, Neighbor, SearchOptions, Selector};

/// Describe what a Python object is, for error messages ("float32 array of shape (3, 16)").
fn describe(obj: &Bound<'_, PyAny>) -> String {
    match (obj.getattr("dtype"), obj.getattr("shape")) {
        (Ok(dtype), Ok(shape)) => format!("{dtype} array of shape {shape}"),
        _ => obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "object".into()),
    }
}

/// A borrowed, C-contiguous uint8 array of 1 or 2 dimensions, checked against `width`.
struct CodesArg<'py> {
    array: PyReadonlyArrayDyn<'py, u8>,
    rows: usize,
    width: usize,
    one_d: bool,
}

fn codes_arg<'py>(
    obj: &Bound<'py, PyAny>,
    name: &str,
    width: Option<usize>,
) -> PyResult<CodesArg<'py>> {
    let expected = match width {
        Some(w) => format!("a C-contiguous numpy uint8 array of shape (n, {w}) or ({w},)"),
        None => "a C-contiguous numpy uint8 array of shape (n, dim/8)".to_string(),
    };
    let bad = || PyValueError::new_err(format!("{name} must be {expected}; got {}", describe(obj)));
    let array = obj.cast::<PyArrayDyn<u8>>().map_err(|_| bad())?.readonly();
    let shape = array.shape().to_vec();
    let (rows, row_width, one_d) = match shape.as_slice() {
        [w] => (1, *w, true),
        [n, w] => (*n, *w, false),
        _ => return Err(bad()),
    };
    if array.as_slice().is_err() || row_width == 0 || width.is_some_and(|w| w != row_width) {
        return Err(bad());
    }
    Ok(CodesArg {
        array,
        rows,
        width: row_width,
        one_d,
    })
}

fn parse_kernel(kernel: Option<&str>) -> PyResult<Option<Kernel>> {
    kernel
        .map(|name| {
            Kernel::from_name(name).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "unknown kernel {name:?}; expected one of: avx512, avx2, neon, words, scalar"
                ))
            })
        })
        .transpose()
}

fn parse_selector(selector: &str) -> PyResult<Selector> {
    match selector {
        "auto" => Ok(Selector::Auto),
        "counting" => Ok(Selector::Counting),
        "heap" => Ok(Selector::Heap),
        other => Err(PyValueError::new_err(format!(
            "unknown selector {other:?}; expected 'auto', 'counting' or 'heap'"
        ))),
    }
}

/// Turn per-query neighbour lists into `(ids int64, distances int32)` arrays.
fn to_arrays<'py>(
    py: Python<'py>,
    lists: Vec<Vec<Neighbor>>,
    one_d: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let q = lists.len();
    let k = lists.first().map_or(0, Vec::len);
    let mut ids = Vec::with_capacity(q * k);
    let mut dists = Vec::with_capacity(q * k);
    for list in &lists {
        for &(d, id) in list {
            ids.push(i64::from(id));
            dists.push(d as i32);
        }
    }
    let shape: Vec<usize> = if one_d { vec![k] } else { vec![q, k] };
    let ids = PyArray1::from_vec(py, ids).reshape(shape.clone())?;
    let dists = PyArray1::from_vec(py, dists).reshape(shape)?;
    PyTuple::new(py, [ids.into_any(), dists.into_any()])
}

fn options(
    k: usize,
    threads: Option<usize>,
    kernel: Option<&str>,
    selector: &str,
) -> PyResult<SearchOptions> {
    Ok(SearchOptions {
        k,
        threads: threads.unwrap_or(0),
        kernel: parse_kernel(kernel)?,
        selector: parse_selector(selector)?,
    })
}

/// Exact top-k by Hamming distance; see `maguyva._core.pyi`.
#[pyfunction]
#[pyo3(signature = (queries, codes, k, *, threads=None, kernel=None, selector="auto"))]
fn hamming_topk<'py>(
    py: Python<'py>,
    queries: &Bound<'py, PyAny>,
    codes: &Bound<'py, PyAny>,
    k: usize,
    threads: Option<usize>,
    kernel: Option<&str>,
    selector: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let codes = codes_arg(codes, "codes", None)?;
    let queries = codes_arg(queries, "queries", Some(codes.width))?;
    let opts = options(k, threads, kernel, selector)?;
    let (q, c) = (queries.array.as_slice()?, codes.array.as_slice()?);
    let width = codes.width;
    let lists = py
        .detach(|| search::topk(q, Codes::new(c, width)?, None, &opts))
        .map_err(to_py)?;
    to_arrays(py, lists, queries.one_d)
}

/// Distances from one query to every row of `codes` (uint32); see `maguyva._core.pyi`.
#[pyfunction]
#[pyo3(signature = (query, codes, *, kernel=None))]
fn hamming_distances<'py>(
    py: Python<'py>,
    query: &Bound<'py, PyAny>,
    codes: &Bound<'py, PyAny>,
    kernel: Option<&str>,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let codes = codes_arg(codes, "codes", None)?;
    let query = codes_arg(query, "query", Some(codes.width))?;
    if query.rows != 1 {
        return Err(PyValueError::new_err(format!(
            "query must be a single code of shape ({},); got {} rows",
            codes.width, query.rows
        )));
    }
    let kernel = parse_kernel(kernel)?;
    let (q, c) = (query.array.as_slice()?, codes.array.as_slice()?);
    let width = codes.width;
    let out = py
        .detach(|| search::distances(q, Codes::new(c, width)?, kernel))
        .map_err(to_py)?;
    Ok(PyArray1::from_vec(py, out))
}

/// The distance kernels this CPU supports, fastest first (the first is the default).
#[pyfunction]
fn hamming_kernels() -> Vec<&'static str> {
    Kernel::available().into_iter().map(Kernel::name).collect()
}

/// An owned, growable code store with tombstones; thread-safe (a read-write lock inside).
#[pyclass(name = "HammingIndex", module = "maguyva._core", frozen)]
struct PyHammingIndex {
    inner: RwLock<HammingIndex>,
}

impl PyHammingIndex {
    fn read(&self) -> PyResult<std::sync::RwLockReadGuard<'_, HammingIndex>> {
        self.inner
            .read()
            .map_err(|_| PyRuntimeError::new_err("HammingIndex lock poisoned"))
    }
    fn write(&self) -> PyResult<std::sync::RwLockWriteGuard<'_, HammingIndex>> {
        self.inner
            .write()
            .map_err(|_| PyRuntimeError::new_err("HammingIndex lock poisoned"))
    }
}

#[pymethods]
impl PyHammingIndex {
    #[new]
    fn new(width: usize) -> PyResult<Self> {
        Ok(PyHammingIndex {
            inner: RwLock::new(HammingIndex::new(width).map_err(to_py)?),
        })
    }

    /// Bytes per code (dim / 8).
    #[getter]
    fn width(&self) -> PyResult<usize> {
        Ok(self.read()?.width())
    }

    /// Ids not deleted.
    #[getter]
    fn live(&self) -> PyResult<usize> {
        Ok(self.read()?.live())
    }

    fn __len__(&self) -> PyResult<usize> {
        Ok(self.read()?.len())
    }

    /// Append rows; returns the id of the first one.
    fn add(&self, py: Python<'_>, codes: &Bound<'_, PyAny>) -> PyResult<u32> {
        let width = self.read()?.width();
        let codes = codes_arg(codes, "codes", Some(width))?;
        let data = codes.array.as_slice()?;
        py.detach(|| {
            self.inner
                .write()
                .map_err(|_| PyRuntimeError::new_err("HammingIndex lock poisoned"))?
                .add(data)
                .map_err(to_py)
        })
    }

    /// Tombstone ids; returns how many were live before.
    fn delete(&self, ids: Vec<i64>) -> PyResult<usize> {
        let mut inner = self.write()?;
        let mut n = 0;
        for id in ids {
            let id = u32::try_from(id)
                .map_err(|_| PyValueError::new_err(format!("id {id} out of range")))?;
            n += usize::from(inner.delete(id).map_err(to_py)?);
        }
        Ok(n)
    }

    fn is_deleted(&self, id: u32) -> PyResult<bool> {
        Ok(self.read()?.is_deleted(id))
    }

    /// Exact top-k of each query over the live rows: `(ids, distances)`.
    #[pyo3(signature = (queries, k, *, threads=None, kernel=None, selector="auto"))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        queries: &Bound<'py, PyAny>,
        k: usize,
        threads: Option<usize>,
        kernel: Option<&str>,
        selector: &str,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let width = self.read()?.width();
        let queries = codes_arg(queries, "queries", Some(width))?;
        let opts = options(k, threads, kernel, selector)?;
        let q = queries.array.as_slice()?;
        let lists = py.detach(|| {
            self.inner
                .read()
                .map_err(|_| PyRuntimeError::new_err("HammingIndex lock poisoned"))?
                .search(q, &opts)
                .map_err(to_py)
        })?;
        to_arrays(py, lists, queries.one_d)
    }

    /// A copy of all codes (deleted rows included), shape (len, width).
    fn codes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.read()?;
        let rows = inner.len();
        let arr = PyArray1::from_slice(py, inner.codes()).reshape([rows, inner.width()])?;
        Ok(arr.into_any())
    }
}

/// `crc32_file(path) -> (size, crc)`: the CRC-32 (IEEE, equal to `zlib.crc32`) of a whole
/// file, read in 1 MiB blocks with the GIL released (the index commit's checksum table and
/// fsck: crc32fast is several times faster than zlib's on large files). Registered with the
/// Hamming bindings because the semantic side (vector files) and the commit share its owner.
#[pyfunction]
fn crc32_file(py: Python<'_>, path: std::path::PathBuf) -> PyResult<(u64, u32)> {
    use std::io::Read;
    py.detach(|| -> std::io::Result<(u64, u32)> {
        let mut file = std::fs::File::open(&path)?;
        let mut hasher = crc32fast::Hasher::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut size = 0u64;
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            size += n as u64;
        }
        Ok((size, hasher.finalize()))
    })
    .map_err(|e| {
        PyErr::from(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        ))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(crc32_file, m)?)?;
    m.add_function(wrap_pyfunction!(hamming_topk, m)?)?;
    m.add_function(wrap_pyfunction!(hamming_distances, m)?)?;
    m.add_function(wrap_pyfunction!(hamming_kernels, m)?)?;
    m.add_class::<PyHammingIndex>()?;
    Ok(())
}
