//! Compressed blocks for the Python store (`maguyva.store.blocks`): one file's chunk or
//! extraction rows as a zstd frame with its content checksum (a damaged frame is an error,
//! never other rows). The work runs with the GIL released; each thread keeps its contexts.
//!
//! A frame may be written with one of the built-in dictionaries (`DICTIONARIES`: 4 KiB
//! each, trained once on the CPython standard library's chunk and extraction rows with
//! `benches/row_dicts.py`): a file's rows are a few KB, too few for zstd to learn the keys
//! and idioms they share with every other file's. The frame names its dictionary (its
//! header's dictionary id), and decompression takes the one it names. A dictionary is never
//! changed once shipped (frames written with it must stay readable): a new one gets a new id.

use std::cell::RefCell;
use std::io;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zstd::bulk::{Compressor, Decompressor};
use zstd::zstd_safe::CParameter;

/// The built-in dictionaries: (name, dictionary id, bytes).
const DICTIONARIES: [(&str, u32, &[u8]); 2] = [
    (
        "chunks",
        0x4D47_0001,
        include_bytes!("dicts/chunks-1.zdict"),
    ),
    (
        "extract",
        0x4D47_0002,
        include_bytes!("dicts/extract-1.zdict"),
    ),
];

thread_local! {
    static COMPRESSOR: RefCell<Option<(i32, usize, Compressor<'static>)>> =
        const { RefCell::new(None) };
    static DECOMPRESSORS: RefCell<Vec<Option<Decompressor<'static>>>> =
        const { RefCell::new(Vec::new()) };
}

/// The index in `DICTIONARIES` of `name` plus one (0: none).
fn dictionary_slot(name: Option<&str>) -> PyResult<usize> {
    match name {
        None => Ok(0),
        Some(n) => DICTIONARIES
            .iter()
            .position(|d| d.0 == n)
            .map(|i| i + 1)
            .ok_or_else(|| PyValueError::new_err(format!("zstd: no dictionary {n:?}"))),
    }
}

fn compress(data: &[u8], level: i32, slot_of: usize) -> io::Result<Vec<u8>> {
    COMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot
            .as_ref()
            .is_none_or(|(l, d, _)| *l != level || *d != slot_of)
        {
            let mut c = match slot_of {
                0 => Compressor::new(level)?,
                i => Compressor::with_dictionary(level, DICTIONARIES[i - 1].2)?,
            };
            c.set_parameter(CParameter::ChecksumFlag(true))?;
            *slot = Some((level, slot_of, c));
        }
        let (_, _, c) = slot.as_mut().expect("set above");
        c.compress(data)
    })
}

fn decompress(data: &[u8], size: usize) -> io::Result<Vec<u8>> {
    let slot_of = match zstd::zstd_safe::get_dict_id_from_frame(data) {
        None => 0,
        Some(id) => {
            DICTIONARIES
                .iter()
                .position(|d| d.1 == id.get())
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("a frame of dictionary {id}, which this build does not have"),
                    )
                })?
                + 1
        }
    };
    DECOMPRESSORS.with(|cell| {
        let mut slots = cell.borrow_mut();
        if slots.len() <= slot_of {
            slots.resize_with(DICTIONARIES.len() + 1, || None);
        }
        let d = &mut slots[slot_of];
        if d.is_none() {
            *d = Some(match slot_of {
                0 => Decompressor::new()?,
                i => Decompressor::with_dictionary(DICTIONARIES[i - 1].2)?,
            });
        }
        d.as_mut().expect("set above").decompress(data, size)
    })
}

/// `zstd_compress(data, level, dictionary=None) -> bytes`: `data` as one zstd frame at
/// `level`, with the frame's content checksum; with a built-in `dictionary` (`"chunks"`,
/// `"extract"`) when named.
#[pyfunction]
#[pyo3(signature = (data, level, dictionary=None))]
fn zstd_compress<'py>(
    py: Python<'py>,
    data: &[u8],
    level: i32,
    dictionary: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let slot = dictionary_slot(dictionary)?;
    let out = py
        .detach(|| compress(data, level, slot))
        .map_err(|e| PyValueError::new_err(format!("zstd: {e}")))?;
    Ok(PyBytes::new(py, &out))
}

/// `zstd_decompress(data, size) -> bytes`: the frame `data` decompressed (with the built-in
/// dictionary its header names, if any); ValueError unless it is a sound frame (checksum
/// included) of exactly `size` bytes.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows as the store writes them (a chunk record, a few times over).
    fn rows() -> Vec<u8> {
        let record = br#"{"id": "3f1c", "path": "pkg/core.py", "start_line": 12, "end_line": 30, "kind": "function", "names": ["parse_config"], "text": "def parse_config(text):\n    return dict(line.split('=', 1) for line in text.splitlines())"}"#;
        let mut out = Vec::new();
        for _ in 0..8 {
            out.extend_from_slice(record);
            out.push(b'\n');
        }
        out
    }

    #[test]
    fn each_dictionary_names_its_own_id_and_its_frames_read_back() {
        let data = rows();
        for (i, (name, id, bytes)) in DICTIONARIES.iter().enumerate() {
            // the table's id is the one the dictionary writes into every frame
            assert_eq!(
                zstd::zstd_safe::get_dict_id_from_dict(bytes).map(|d| d.get()),
                Some(*id),
                "{name}"
            );
            let frame = compress(&data, 3, i + 1).expect("compresses");
            assert_eq!(
                zstd::zstd_safe::get_dict_id_from_frame(&frame).map(|d| d.get()),
                Some(*id)
            );
            assert_eq!(decompress(&frame, data.len()).expect("decompresses"), data);
        }
        let plain = compress(&data, 3, 0).expect("compresses");
        assert_eq!(zstd::zstd_safe::get_dict_id_from_frame(&plain), None);
        assert_eq!(decompress(&plain, data.len()).expect("decompresses"), data);
    }

    #[test]
    fn a_frame_of_an_unknown_dictionary_is_an_error() {
        let data = rows();
        let mut frame = compress(&data, 3, 1).expect("compresses");
        // the frame header: magic (4 bytes), descriptor, then the dictionary id (4 bytes
        // little-endian when the descriptor's two low bits say 3)
        assert_eq!(frame[4] & 3, 3, "a four-byte dictionary id");
        let at = 5 + usize::from(frame[4] & 0x20 == 0); // a window byte unless single segment
        frame[at..at + 4].copy_from_slice(&0x4D47_0FFFu32.to_le_bytes());
        let err = decompress(&frame, data.len()).expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("does not have"), "{err}");
    }

    #[test]
    fn a_damaged_frame_is_an_error_not_other_rows() {
        let data = rows();
        for slot in 0..=DICTIONARIES.len() {
            let mut frame = compress(&data, 3, slot).expect("compresses");
            let last = frame.len() - 1; // the content checksum's last byte
            frame[last] ^= 0x55;
            assert!(decompress(&frame, data.len()).is_err(), "slot {slot}");
        }
    }
}
