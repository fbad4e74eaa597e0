//! The core error type. Converted to Python exceptions in exactly one place (`py::errors`).

use std::path::PathBuf;

/// Everything the core can fail with; each variant carries the context a user needs.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// A caller passed an argument that cannot be used (wrong length, shape, value).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A regular expression failed to parse or exceeded the size limits.
    #[error("bad regex: {0}")]
    BadRegex(String),
    /// An index file is corrupt, truncated or of an unknown format.
    #[error("corrupt index file {path}: {reason}")]
    CorruptIndex { path: PathBuf, reason: String },
    /// An I/O error, with the path it happened on.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub type CoreResult<T> = Result<T, CoreError>;
