//! The one place where core errors become Python exceptions.
//!
//! The exception classes themselves are defined in Python (`maguyva.errors`) so that users
//! can catch them without importing the native module; here we look them up and raise them.

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::error::CoreError;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}

#[allow(dead_code)]
fn raise_named(py: Python<'_>, class: &str, message: String) -> PyErr {
    let found = py
        .import("maguyva.errors")
        .and_then(|module| module.getattr(class));
    match found.and_then(|cls| cls.call1((message.clone(),))) {
        Ok(exception) => PyErr::from_value(exception),
        Err(_) => PyValueError::new_err(message),
    }
}

#[allow(dead_code)] // called by the bindings of the modalities as they land
/// Convert a core error into the matching `maguyva.errors` exception.
pub fn to_py(err: CoreError) -> PyErr {
    Python::attach(|py| match err {
        CoreError::InvalidArgument(msg) => PyValueError::new_err(msg),
        CoreError::BadRegex(msg) => raise_named(py, "BadQueryError", format!("bad regex: {msg}")),
        e @ CoreError::CorruptIndex { .. } => raise_named(py, "CorruptIndexError", e.to_string()),
        CoreError::Io { path, source } => {
            PyOSError::new_err(format!("{}: {}", path.display(), source))
        }
    })
}
