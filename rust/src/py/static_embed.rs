//! Python binding of the static tier: pooling ids, and tokenizing and pooling ASCII texts in
//! one call (`StaticTokenizer`); numpy in, numpy out, GIL released.

use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use rayon::prelude::*;
use std::path::PathBuf;

use super::errors::to_py;
use crate::static_embed::{self, Table};
use crate::wordpiece::WordPiece;

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

/// The MiniLM WordPiece vocabulary for ASCII texts; see `maguyva._core.pyi`.
#[pyclass(module = "maguyva._core", frozen)]
struct StaticTokenizer {
    inner: WordPiece,
}

#[pymethods]
impl StaticTokenizer {
    #[new]
    #[pyo3(signature = (vocab, unk, specials, max_word_chars=100))]
    fn new(
        vocab: Vec<String>,
        unk: u32,
        specials: Vec<u32>,
        max_word_chars: usize,
    ) -> PyResult<Self> {
        let tokens: Vec<&str> = vocab.iter().map(String::as_str).collect();
        let inner = WordPiece::new(&tokens, unk, &specials, max_word_chars).map_err(to_py)?;
        Ok(StaticTokenizer { inner })
    }

    /// The ids of one ASCII text, at most `max_tokens`.
    fn encode(&self, py: Python<'_>, text: PyBackedStr, max_tokens: usize) -> PyResult<Vec<u32>> {
        let mut out = Vec::new();
        py.detach(|| self.inner.encode(text.as_bytes(), max_tokens, &mut out))
            .map_err(to_py)?;
        Ok(out)
    }

    /// Tokenize and pool ASCII texts: float32 (texts, dim) and the tokens pooled.
    fn pool<'py>(
        &self,
        py: Python<'py>,
        table: PyReadonlyArray2<'py, i8>,
        scales: PyReadonlyArray1<'py, f32>,
        weights: PyReadonlyArray1<'py, f32>,
        texts: Vec<PyBackedStr>,
        max_tokens: usize,
    ) -> PyResult<(Bound<'py, PyArray2<f32>>, usize)> {
        let dim = table.shape()[1];
        let rows = contiguous(&table, "table")?;
        let scales = contiguous(&scales, "scales")?;
        let weights = contiguous(&weights, "weights")?;
        let bytes: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
        let (out, tokens) = py
            .detach(|| {
                let table = Table::new(rows, dim, scales, weights)?;
                static_embed::pool_texts(&table, &self.inner, &bytes, max_tokens)
            })
            .map_err(to_py)?;
        Ok((
            PyArray1::from_vec(py, out).reshape([texts.len(), dim])?,
            tokens,
        ))
    }

    /// Tokenize and pool texts cut from the files `paths` under `root`, read here on every
    /// core (confined to the root) (`static_embed::pool_spans`): float32 (spans, dim), the tokens pooled, and the
    /// spans left out (zero rows).
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (table, scales, weights, root, paths, crcs, spans, heads, max_tokens, max_bytes))]
    fn pool_spans<'py>(
        &self,
        py: Python<'py>,
        table: PyReadonlyArray2<'py, i8>,
        scales: PyReadonlyArray1<'py, f32>,
        weights: PyReadonlyArray1<'py, f32>,
        root: PathBuf,
        paths: Vec<PyBackedStr>,
        crcs: Vec<u32>,
        spans: Vec<(usize, u32, u32)>,
        heads: Vec<PyBackedStr>,
        max_tokens: usize,
        max_bytes: usize,
    ) -> PyResult<(Bound<'py, PyArray2<f32>>, usize, Vec<usize>)> {
        if heads.len() != spans.len() {
            return Err(PyValueError::new_err(format!(
                "{} spans and {} heads",
                spans.len(),
                heads.len()
            )));
        }
        let dim = table.shape()[1];
        let rows = contiguous(&table, "table")?;
        let scales = contiguous(&scales, "scales")?;
        let weights = contiguous(&weights, "weights")?;
        let names: Vec<&str> = paths.iter().map(|p| &**p).collect();
        let cut: Vec<static_embed::SpanText<'_>> = spans
            .iter()
            .zip(&heads)
            .map(|(&(file, start, end), head)| static_embed::SpanText {
                file,
                start,
                end,
                head: head.as_bytes(),
            })
            .collect();
        let (out, tokens, left) = py
            .detach(|| {
                // read as `repo.reader.read_bytes` reads (`confined`); a file refused or gone
                // is empty here: its CRC-32 differs and its spans are left out
                let real = root.canonicalize().unwrap_or(root);
                let contents: Vec<Vec<u8>> = names
                    .par_iter()
                    .map(|name| crate::confined::read_confined(&real, name).unwrap_or_default())
                    .collect();
                let bytes: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
                let table = Table::new(rows, dim, scales, weights)?;
                static_embed::pool_spans(
                    &table,
                    &self.inner,
                    &bytes,
                    &crcs,
                    &cut,
                    max_tokens,
                    max_bytes,
                )
            })
            .map_err(to_py)?;
        Ok((
            PyArray1::from_vec(py, out).reshape([spans.len(), dim])?,
            tokens,
            left,
        ))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(static_pool, m)?)?;
    m.add_class::<StaticTokenizer>()?;
    Ok(())
}
