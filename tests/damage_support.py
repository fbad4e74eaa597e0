"""Damage an index and see what the CLI answers (issue 20, D1): shared by `tests/test_damage.py`
and the corruption table of docs/durability.md.

Run the table: `.venv/bin/python tests/damage_support.py [--corpus SDIST] [--every N]
[--limit N]` (builds the corpus of `interfaces_corpus.py`, or the unpacked sdist, with text,
structural and graph; for every file of the index, every Nth file of a segmented directory, a
bit flip at its start, middle and end and a truncation to half; prints the counts and each
silently wrong case)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

QUERIES: list[list[str]] = [
    ["search", "-F", "No closing quotation"],  # text (exact match, direct)
    ["search", "where is dedent defined"],  # structural (direct)
    ["search", "who calls dedent"],  # graph
    ["search", "how does text wrapping handle long words"],  # fused
    ["search", "--regex", "def (heappush|heappop)"],  # text regex
    ["search", "class shlex"],
]
"""A fixed query set touching every built modality of the corpus."""

DRIVER = """
import contextlib, io, json, logging, sys
from maguyva.interfaces.cli.main import main
out = []
for argv in json.loads(sys.argv[1]):
    logging.root.handlers.clear()
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        code = main(argv)
    out.append([code, o.getvalue(), e.getvalue()])
print(json.dumps(out))
"""


def answers(root: Path, queries: list[list[str]] = QUERIES) -> list[list[Any]]:
    """`[exit code, stdout, stderr]` of each query, in one fresh process (no state shared
    with earlier corruptions)."""
    out = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(queries)],
        cwd=root, capture_output=True, timeout=300, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr.decode()
    return json.loads(out.stdout)


def index_files(root: Path) -> list[Path]:
    """Every file of the current generation, and the manifest (root-relative, sorted)."""
    gen = max((root / ".maguyva").glob("gen-[0-9]*[0-9]"))
    files = sorted(p for p in gen.rglob("*") if p.is_file())
    return [p.relative_to(root) for p in [root / ".maguyva" / "manifest.json", *files]]


def corrupt(path: Path, how: str, at: float = 0.5, bit: int = 0) -> None:
    """`flip`: one bit at fraction `at` of the file; `flip-many`: one bit every 4 KiB from
    there (every block of a lazily checked file); `truncate`: cut to that fraction."""
    data = bytearray(path.read_bytes())
    if not data:
        return
    offset = min(len(data) - 1, int(len(data) * at))
    if how == "flip":
        data[offset] ^= 1 << bit
    elif how == "flip-many":
        for at_byte in range(offset, len(data), 4096):
            data[at_byte] ^= 1 << bit
    else:
        del data[offset:]
    path.write_bytes(bytes(data))


def verdict(pristine: list[list[Any]], damaged: list[list[Any]]) -> list[str]:
    """Per query: `same` (the undamaged answer), `loud` (exit 2 and a message on stderr),
    or `silent` (anything else: a different answer nobody was told about)."""
    out = []
    for (code0, out0, _), (code, text, err) in zip(pristine, damaged, strict=True):
        if code == code0 and text == out0:
            out.append("same")
        elif code == 2 and err.strip():
            out.append("loud")
        else:
            out.append("silent")
    return out


REQUESTS_QUERIES: list[list[str]] = [
    ["search", "-F", "Invalid URL"],
    ["search", "where is merge_setting defined"],
    ["search", "who calls merge_setting"],
    ["search", "how are redirects followed"],
    ["search", "--regex", "def (get|post)\\("],
    ["search", "class Session"],
]
"""The issue's corpus (requests 2.32.5, `--corpus requests-2.32.5.tar.gz`) and its questions."""


def _corpus(tmp: Path, sdist: str | None) -> tuple[Path, list[list[str]]]:
    """The interfaces corpus, or an unpacked sdist with text, structural and graph."""
    if sdist is None:
        from interfaces_corpus import make_corpus

        return make_corpus(tmp / "base"), QUERIES
    import tarfile

    with tarfile.open(sdist) as tar:
        tar.extractall(tmp / "sdist", filter="data")
    root = next((tmp / "sdist").iterdir())
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    return root, REQUESTS_QUERIES


def table(limit: int | None = None, sdist: str | None = None, every: int = 8) -> dict[str, Any]:
    """The corruption table: every index file x (flip at 0, 0.5, 1; truncate to 0.5)."""
    from maguyva.api import Index

    with tempfile.TemporaryDirectory() as tmp:
        base, queries = _corpus(Path(tmp), sdist)
        Index.open(base).build()
        pristine = answers(base, queries)
        files = index_files(base)
        # the segmented directories (64 chunk, 64 extraction, 256 symbol segments) are
        # sampled, every `every`th segment; every other file is corrupted
        files = [f for f in files if not f.stem.isdigit() or int(f.stem) % every == 0]
        cases = [(rel, how, at) for rel in files
                 for how, at in (("flip", 0.0), ("flip", 0.5), ("flip", 0.999),
                                 ("truncate", 0.5))]  # fmt: skip
        cases = cases[:limit] if limit else cases
        counts = {"same": 0, "loud": 0, "silent": 0}
        silent = []
        for n, (rel, how, at) in enumerate(cases):
            work = Path(tmp) / f"case-{n}"
            shutil.copytree(base, work, symlinks=True)
            corrupt(work / rel, how, at)
            verdicts = verdict(pristine, answers(work, queries))
            worst = "silent" if "silent" in verdicts else "loud" if "loud" in verdicts else "same"
            counts[worst] += 1
            if worst == "silent":
                silent.append(f"{rel} {how}@{at}: {verdicts}")
            shutil.rmtree(work)
        return {"corruptions": len(cases), **counts, "silent_cases": silent}


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))

    def option(name: str) -> str | None:
        return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None

    limit, every = option("--limit"), option("--every")
    print(json.dumps(table(int(limit) if limit else None, option("--corpus"),
                           int(every) if every else 8), indent=1))  # fmt: skip
