"""Pausing Python's cyclic garbage collector around bulk allocation.

Building a graph or a reader's name tables allocates millions of long-lived objects and frees
almost none, so the collector's passes find nothing to free; and in a process that also holds
a writer's in-memory graph (an MCP server with `--watch`, the durability benchmark), each
full pass walks every one of those objects too: a graph reopen on a 10k-file tree took 0.4 s
or 1.0-1.2 s depending on whether a full pass fell inside it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the cyclic collector off (restored after, if it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
