"""The structural modality: tree-sitter symbols and their searcher."""
