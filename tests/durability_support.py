"""Shared helpers of the durability tests (store, incremental, crash, concurrency, fsck,
watch): a small real repository, its edits, and the golden answers of a fixed query set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

MODALITIES = ["text", "structural", "graph"]
CONFIG: dict[str, Any] = {"modalities": MODALITIES, "jobs": 1}

QUERIES = [
    "parse_config",
    "who calls load_items",
    '"connection refused"',
    "class Registry",
    "how are items rendered",
]

FILES = {
    "pkg/__init__.py": "from .core import Registry, load_items\n",
    "pkg/core.py": '''"""Core registry."""


class Registry:
    def __init__(self):
        self.items = {}

    def add(self, name, value):
        self.items[name] = value
        return value


def load_items(path):
    with open(path) as fh:
        return [line.strip() for line in fh]


def parse_config(text):
    if not text:
        raise ValueError("connection refused")
    return dict(line.split("=", 1) for line in text.splitlines())
''',
    "pkg/render.py": """from .core import load_items


def render(path):
    items = load_items(path)
    return "\\n".join(f"- {item}" for item in items)


def render_table(path, width=20):
    return [item.ljust(width) for item in load_items(path)]
""",
    "tools/cli.py": """import sys

from pkg.core import parse_config
from pkg.render import render


def main(argv):
    config = parse_config(open(argv[1]).read())
    print(render(config.get("items", "items.txt")))


if __name__ == "__main__":
    main(sys.argv)
""",
    "README.md": "# demo\n\nItems are rendered by `render`.\n",
}

VARIANTS = [
    {},  # the base
    {
        "pkg/core.py": FILES["pkg/core.py"].replace("connection refused", "connection reset")
        + "\n\ndef load_items_fast(path):\n    return load_items(path)\n"
    },
    {"pkg/render.py": None, "pkg/show.py": FILES["pkg/render.py"]},  # a rename
    {
        "tools/extra.py": "from pkg.core import load_items\n\n\ndef extra():\n"
        "    return load_items('x')\n",
        "README.md": None,
    },
]
"""Repository states: each maps paths to new content (None deletes) over the base."""


def write_repo(root: Path, variant: int = 0) -> None:
    """Make `root` hold exactly state `variant` (the base with that variant's edits)."""
    wanted = dict(FILES)
    for path, text in VARIANTS[variant].items():
        if text is None:
            wanted.pop(path, None)
        else:
            wanted[path] = text
    for path in list(current_files(root)):
        if path not in wanted:
            (root / path).unlink()
    for path, text in wanted.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text() != text:
            target.write_text(text)


def current_files(root: Path) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            out.append(Path(dirpath, name).relative_to(root).as_posix())
    return out


def answers(root: Path, index_dir: Path | None = None) -> list[Any]:
    """The result lists (path, lines, symbol) of every query: what a user sees."""
    from maguyva.query.engine import Engine

    engine = Engine.open(root, index_dir)
    out = []
    for query in QUERIES:
        response = engine.search(query, limit=10)
        out.append([(r.path, r.start_line, r.end_line, r.symbol) for r in response.results])
    return out


def build(root: Path, **kwargs: Any) -> Any:
    from maguyva.build.indexer import build_index

    return build_index(root, config=dict(CONFIG), **kwargs)


def index_in_child(
    root: Path, env: dict[str, str] | None = None, timeout: float = 120, faults: str | None = None
):
    """Run one index build in a child process (for kill -9 and fault-injection runs); `faults`
    is a spec of `support.faults` (`kill@17`), installed in the child by its launcher."""
    code = (
        "import sys; from pathlib import Path; from maguyva.build.indexer import build_index; "
        f"build_index(Path(sys.argv[1]), config={CONFIG!r}, wait_for_lock=True)"
    )
    from support import faults as fault_layer

    argv = (
        [sys.executable, "-c", code, str(root)]
        if faults is None
        else fault_layer.command(faults, str(root), code=code)
    )
    return subprocess.Popen(
        argv,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
