"""Process-wide thread pools, created on first use and shared by name.

Each pool is for one kind of work (modality searches, fsyncs, deleting old generations); its
threads are joined at interpreter exit, as `concurrent.futures` does for every pool.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

_POOLS: dict[str, ThreadPoolExecutor] = {}
_LOCK = threading.Lock()


def shared_pool(name: str, max_workers: int) -> ThreadPoolExecutor:
    """The pool called `name` (threads named `maguyva-<name>`), made with `max_workers` the
    first time it is asked for."""
    with _LOCK:
        pool = _POOLS.get(name)
        if pool is None:
            pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=f"maguyva-{name}")
            _POOLS[name] = pool
        return pool
