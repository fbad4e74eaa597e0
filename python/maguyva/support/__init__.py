"""Helpers that know nothing of the index: shared thread pools, GC pauses, sealed files."""
