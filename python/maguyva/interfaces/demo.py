"""The README's main job: index a real repository and answer one query of each intent.

The corpus is a real source distribution from PyPI (code nobody on this project wrote),
downloaded once into `.cache/demo/`. Run with `make demo` or `python -m maguyva.interfaces.demo [PATH]`
to use a repository of your own instead.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

from maguyva.build.indexer import build_index
from maguyva.errors import MaguyvaError
from maguyva.interfaces.cli.main import format_response
from maguyva.query.engine import Engine

SDIST = "requests==2.32.3"
CACHE = Path(".cache/demo")

QUERIES = [
    "where is merge_setting defined",  # find_definition (rule 1 phrase -> direct)
    "who calls merge_setting",  # find_references (graph)
    "what breaks if I change to_key_val_list",  # impact_analysis (graph)
    '"Invalid URL"',  # exact_match (text, direct)
    "how are redirects followed and when is authorization stripped",  # understand_code (fusion)
    "code similar to: for key, value in headers.items(): if value is None: del headers[key]",
]


def fetch_corpus() -> Path:
    """Download and unpack the demo sdist (once)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    name, version = SDIST.split("==")
    target = CACHE / f"{name}-{version}"
    if target.is_dir():
        return target
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         "-d", str(CACHE), SDIST],
        check=True,
    )  # fmt: skip
    archive = next(CACHE.glob(f"{name}-{version}.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(CACHE, filter="data")
    return target


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        root = Path(argv[0]) if argv else fetch_corpus()
        print(f"== indexing {root}", flush=True)
        summary = build_index(root, config={"semantic_max_chunks": 2000})
        for name, status in summary.modalities.items():
            state = "built" if status.get("built") else f"unavailable ({status.get('reason')})"
            print(f"   {name}: {state} in {summary.timings_s.get(name, 0):.1f}s")
        engine = Engine.open(root)
        for query in QUERIES:
            print(f"\n== maguyva search {query!r} --explain")
            print(format_response(engine.search(query, limit=5), explain=True), flush=True)
    except (MaguyvaError, OSError, subprocess.CalledProcessError) as exc:
        print(f"maguyva demo: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
