"""The graph modality: resolution, store, incremental updates, follow-ups."""
