"""Maguyva: code search that classifies each question and fuses the retrievers it deserves."""

from __future__ import annotations

__version__ = "0.1.0"
