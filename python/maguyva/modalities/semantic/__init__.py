"""The semantic modality: binary embeddings searched by Hamming distance."""
