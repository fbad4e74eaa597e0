"""Saying a thing once per key, for the last few groups of keys only.

A long-lived process (the warm search server, the MCP server) reads generation after
generation; a set of every (generation, file) it ever warned about would grow with each one.
Keys are kept per group (a generation directory), and only the newest groups are kept: a
generation no reader opens any more has nothing left to say."""

from __future__ import annotations

import threading
from collections import OrderedDict

GROUPS = 4
"""Groups remembered: a reader and the generations a server answers from while it switches."""


class OncePer:
    """Which keys each of the last `groups` groups has seen (thread-safe)."""

    def __init__(self, groups: int = GROUPS) -> None:
        self._groups: OrderedDict[str, set[str]] = OrderedDict()
        self._max = groups
        self._lock = threading.Lock()

    def first(self, group: str, key: str) -> bool:
        """True the first time `key` is seen in `group` (the caller then says it); a group
        past the newest `groups` is forgotten whole, so a key of it counts as new again."""
        with self._lock:
            seen = self._groups.get(group)
            if seen is None:
                seen = self._groups[group] = set()
                while len(self._groups) > self._max:
                    self._groups.popitem(last=False)
            else:
                self._groups.move_to_end(group)
            if key in seen:
                return False
            seen.add(key)
            return True

    def __len__(self) -> int:
        """How many keys are remembered, over every group kept."""
        with self._lock:
            return sum(len(keys) for keys in self._groups.values())
