"""The repository as files: which to index, what changed, paths kept inside the root."""
