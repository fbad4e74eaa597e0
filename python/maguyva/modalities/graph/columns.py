"""A graph's nodes as columns (`node_columns`), with the definition kinds numbered as first
seen: what a build writes and what a remembering writer keeps and patches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

_DEF_KINDS: dict[str, int] = {}  # every definition kind seen, numbered as first seen


def node_columns(nodes: Sequence[Any]) -> dict[str, Any]:
    """The nodes' fields as columns: kind, file, start, end, def_kind_id (`_DEF_KINDS`'s
    number of the kind; arrays), def_kind, name, qname."""
    n = len(nodes)
    kinds = _DEF_KINDS
    kind_ids = (kinds.setdefault(x.def_kind, len(kinds)) for x in nodes)
    return {
        "def_kind_id": np.fromiter(kind_ids, dtype=np.int32, count=n),
        "kind": np.fromiter((int(x.kind) for x in nodes), dtype=np.uint8, count=n),
        "file": np.fromiter((x.file for x in nodes), dtype=np.int32, count=n),
        "start": np.fromiter((x.start for x in nodes), dtype=np.int32, count=n),
        "end": np.fromiter((x.end for x in nodes), dtype=np.int32, count=n),
        "def_kind": [x.def_kind for x in nodes],
        "name": [x.name for x in nodes],
        "qname": [x.qname for x in nodes],
    }
