"""The text modality: literal, regex and BM25 search over the Rust trigram index."""
