//! The repository walker shared by every modality (built on the `ignore` crate).
