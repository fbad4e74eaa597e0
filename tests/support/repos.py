"""Small repositories written from a dict of files and indexed without semantic; the check
that a reference or impact answer lists a use line."""

from __future__ import annotations

from pathlib import Path

from maguyva.interfaces.cli.main import main
from maguyva.model import Response
from maguyva.query.engine import Engine


def indexed(root: Path, files: dict[str, str]) -> Engine:
    """`files` (relative path -> text) written under `root`, indexed by the CLI with text,
    structural and graph, opened."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / ".maguyva.toml").write_text('modalities = ["text", "structural", "graph"]\n')
    assert main(["-q", "index", str(root)]) == 0
    return Engine.open(root)


def assert_use_listed(res: Response, user: str, line: int) -> None:
    """`res` has a hit on file `user` whose use lines include `line`."""
    hits = {r.path: r for r in res.results}
    assert user in hits, [r.path for r in res.results]
    assert line in (hits[user].lines or []), hits[user].lines
