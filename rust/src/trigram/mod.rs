//! Trigram index for literal and regex search, and the repository walker.
//! (Owned by the text-modality work; see docs/design.md.)
