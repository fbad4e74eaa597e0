"""The index on disk: generations and the manifest, chunk and extraction segments, encodings."""
