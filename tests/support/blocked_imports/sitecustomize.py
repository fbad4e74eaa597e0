"""Make the top-level modules named in `MAGUYVA_TEST_BLOCKED` (comma-separated) unimportable,
as if their distribution were not installed: a child started with this folder on PYTHONPATH
sees the real `ModuleNotFoundError` an install without the optional extra gives. Test-only."""

from __future__ import annotations

import os
import sys
from importlib.abc import MetaPathFinder

BLOCKED = {name for name in os.environ.get("MAGUYVA_TEST_BLOCKED", "").split(",") if name}


class _Blocked(MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


if BLOCKED:
    sys.meta_path.insert(0, _Blocked())
