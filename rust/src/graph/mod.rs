//! The graph files' native parts, without Python: the name hash of the lookup sections (part
//! of the on-disk format 3) and the adjacency built by counting sorts. The binding
//! (`py::graphio`, `py::graphmerge`) only converts arrays and releases the GIL.

pub mod csr;
pub mod names;
