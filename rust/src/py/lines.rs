//! Python binding of the line printer (`crate::lines`): one call per result, one `bytes`
//! back, the GIL released while it prints.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::lines::{self, Highlight, JsonParts, LineOptions, ResultLines};

/// `(printed bytes, matched lines, matches, bytes of the printed lines)`.
type PrintedTuple = (Py<PyBytes>, usize, usize, usize);

/// Print one result's lines; see `maguyva._core.pyi` and `interfaces/output.py`.
#[pyfunction]
#[pyo3(signature = (data, start, end, lines, *, every, cap, context=0, literal=None,
                    insensitive=false, color=false, json_path=None, json_match=None))]
#[allow(clippy::too_many_arguments)]
fn print_lines(
    py: Python<'_>,
    data: &[u8],
    start: i64,
    end: i64,
    lines: Vec<i64>,
    every: bool,
    cap: usize,
    context: usize,
    literal: Option<&[u8]>,
    insensitive: bool,
    color: bool,
    json_path: Option<&str>,
    json_match: Option<&str>,
) -> PrintedTuple {
    let highlight = literal.and_then(|l| Highlight::new(l, insensitive));
    let printed = py.detach(|| {
        let opts = LineOptions {
            every,
            cap,
            context,
            highlight: highlight.as_ref(),
            color,
            json: json_path.map(|path| JsonParts {
                path,
                on_match: json_match.unwrap_or("null"),
            }),
        };
        lines::print_lines(data, start, end, &lines, &opts)
    });
    (
        PyBytes::new(py, &printed.out).unbind(),
        printed.matched_lines,
        printed.matches,
        printed.bytes,
    )
}

/// One result for `print_results`: `(heading, path, start, end, lines)`.
type ResultTuple = (Vec<u8>, String, i64, i64, Vec<i64>);

/// Every result of a text answer in one buffer; see `maguyva._core.pyi` and
/// `interfaces/output.py`.
#[pyfunction]
#[pyo3(signature = (root, results, *, every, cap, context=0, literal=None, insensitive=false,
                    color=false))]
#[allow(clippy::too_many_arguments)]
fn print_results(
    py: Python<'_>,
    root: std::path::PathBuf,
    results: Vec<ResultTuple>,
    every: bool,
    cap: usize,
    context: usize,
    literal: Option<&[u8]>,
    insensitive: bool,
    color: bool,
) -> PyResult<Py<PyBytes>> {
    let highlight = literal.and_then(|l| Highlight::new(l, insensitive));
    let blocks = py.detach(|| {
        let opts = LineOptions {
            every,
            cap,
            context,
            highlight: highlight.as_ref(),
            color,
            json: None,
        };
        let items: Vec<ResultLines<'_>> = results
            .iter()
            .map(|(heading, path, start, end, lines)| ResultLines {
                heading,
                path,
                start: *start,
                end: *end,
                lines,
            })
            .collect();
        lines::print_result_blocks(&root, &items, &opts)
    });
    // The blocks copied once, into the `bytes` returned (no concatenated copy first).
    let total = blocks.iter().map(Vec::len).sum();
    let out = PyBytes::new_with(py, total, |buf| {
        let mut at = 0;
        for block in &blocks {
            buf[at..at + block.len()].copy_from_slice(block);
            at += block.len();
        }
        Ok(())
    });
    Ok(out?.unbind())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(print_lines, m)?)?;
    m.add_function(wrap_pyfunction!(print_results, m)?)?;
    Ok(())
}
