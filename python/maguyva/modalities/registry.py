"""Where each modality's implementation lives. The engine and the indexer know modalities only
through this table and the protocol in retriever.py."""

from __future__ import annotations

import importlib
from typing import Any

from maguyva.errors import ModalityUnavailable

MODALITY_MODULES: dict[str, str] = {
    "text": "maguyva.modalities.text.modality",
    "structural": "maguyva.modalities.structural.modality",
    "graph": "maguyva.modalities.graph",
    "semantic": "maguyva.modalities.semantic.modality",
}

BUILD_ORDER: tuple[str, ...] = ("text", "structural", "graph", "semantic")
"""Cheap, always-useful modalities first: a slow embedding run never delays lexical search."""


def load_modality(name: str) -> Any:
    """The `MODALITY` object of a modality, or ModalityUnavailable if it is not installed."""
    module_name = MODALITY_MODULES.get(name)
    if module_name is None:
        raise ModalityUnavailable(f"unknown modality {name!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise ModalityUnavailable("not available in this installation") from None
        raise
    modality = getattr(module, "MODALITY", None)
    if modality is None:
        raise ModalityUnavailable("not available in this installation")
    return modality
