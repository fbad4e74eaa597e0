//! Compressed blocks for the Python store (`maguyva.store.blocks`): one file's chunk or
//! extraction rows as a zstd frame with its content checksum (a damaged frame is an error,
//! never other rows). The work runs with the GIL released; each thread keeps its contexts.

use std::cell::RefCell;
use std::io;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zstd::bulk::{Compressor, Decompressor};
use zstd::zstd_safe::CParameter;

thread_local! {
    static COMPRESSOR: RefCell<Option<(i32, Compressor<'static>)>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

fn compress(data: &[u8], level: i32) -> io::Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|(l, _)| *l != level) {
            let mut c = Compressor::new(level)?;
            c.set_parameter(CParameter::ChecksumFlag(true))?;
            *slot = Some((level, c));
        }
        let (_, c) = slot.as_mut().expect("set above");
        c.compress(data)
    })
}

fn decompress(data: &[u8], size: usize) -> io::Result<Vec<u8>> {
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Decompressor::new()?);
        }
        slot.as_mut().expect("set above").decompress(data, size)
    })
}

/// `zstd_compress(data, level) -> bytes`: `data` as one zstd frame at `level`, with the
/// frame's content checksum.
#[pyfunction]
fn zstd_compress<'py>(py: Python<'py>, data: &[u8], level: i32) -> PyResult<Bound<'py, PyBytes>> {
    let out = py
        .detach(|| compress(data, level))
        .map_err(|e| PyValueError::new_err(format!("zstd: {e}")))?;
    Ok(PyBytes::new(py, &out))
}

/// `zstd_decompress(data, size) -> bytes`: the frame `data` decompressed; ValueError unless it
/// is a sound frame (checksum included) of exactly `size` bytes.
#[pyfunction]
fn zstd_decompress<'py>(
    py: Python<'py>,
    data: &[u8],
    size: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let out = py
        .detach(|| decompress(data, size))
        .map_err(|e| PyValueError::new_err(format!("zstd: {e}")))?;
    if out.len() != size {
        return Err(PyValueError::new_err(format!(
            "zstd: {} bytes decompressed, {size} expected",
            out.len()
        )));
    }
    Ok(PyBytes::new(py, &out))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(zstd_compress, m)?)?;
    m.add_function(wrap_pyfunction!(zstd_decompress, m)?)?;
    Ok(())
}
