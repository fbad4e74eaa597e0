//! Exact top-k by Hamming distance over packed binary codes.
//! (Owned by the semantic-modality work; see docs/design.md.)
