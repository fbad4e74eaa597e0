//! The binding layer: the only code that uses PyO3. Each submodule converts one core module.

use pyo3::prelude::*;

mod errors;
mod fusion;
mod graphio;
mod graphmerge;
mod hamming;
mod trigram;
mod walk;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    fusion::register(m)?;
    graphio::register(m)?;
    graphmerge::register(m)?;
    trigram::register(m)?;
    hamming::register(m)?;
    walk::register(m)?;
    Ok(())
}
