//! The binding layer: the only code that uses PyO3. Each submodule converts one core module.

use pyo3::prelude::*;

mod confined;
mod content;
mod errors;
mod fusion;
mod graphio;
mod graphmerge;
mod hamming;
mod lines;
mod static_embed;
mod trigram;
mod walk;

/// `gil_used = false`: the bindings keep no state that the GIL would guard. The two classes
/// are `frozen` (`TextIndex` immutable; `HammingIndex` behind an `RwLock`), the core's statics
/// are immutable tables, atomics or thread-locals, and every call borrows its arguments for
/// the call only (docs/design.md, "Free-threaded Python").
#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    confined::register(m)?;
    content::register(m)?;
    errors::register(m)?;
    fusion::register(m)?;
    graphio::register(m)?;
    graphmerge::register(m)?;
    trigram::register(m)?;
    hamming::register(m)?;
    lines::register(m)?;
    static_embed::register(m)?;
    walk::register(m)?;
    Ok(())
}
