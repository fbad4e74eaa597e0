"""Outside-root leaks and secret shapes sent, the two numbers of the trust table in
docs/interfaces.md.

    python benches/trust_probes.py leaks [--trust-repo-config]   # with the python to measure
    python benches/trust_probes.py secrets [PYTHON]              # PYTHON runs `maguyva index`
    python benches/trust_probes.py reader                        # the safe reader's cost

`leaks` builds the hostile repository of `tests/test_trust.py` (a `.maguyva.toml` with
`follow_symlinks = true`, links out of the root) with the maguyva of the running python and
counts the MCP probe calls whose answer shows outside content. `secrets` indexes one file per
credential shape of `tests/test_secrets.py` with the Voyage provider against the local server
and counts the shapes that reached it.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from test_embed_voyage import VoyageServer
from test_secrets import BENIGN, SHAPES, secret_values
from test_trust import OUTSIDE_NAMES, cli_env, maguyva, make_hostile, run_probes

from maguyva.api import Index


def leaks(flag: tuple[str, ...]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = make_hostile(base)
        maguyva(root, "index", "--modalities", "text,structural,graph", *flag, env=cli_env(base))
        indexed = sorted(f for f in Index.open(root).indexed_files()
                         if f in OUTSIDE_NAMES or f.startswith("outdir/"))  # fmt: skip
        calls, bad = run_probes(root, flag)
        print(f"outside files indexed: {indexed}; leaking calls: {len(bad)} of {calls}")


def secrets(python: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = base / "repo"
        for path, text, _ in SHAPES.values():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        (root / "views.py").write_text(BENIGN)
        server = VoyageServer()
        env = cli_env(base, VOYAGE_API_KEY="pa-test-key-0123456789abcdef0123456789",
                      MAGUYVA_VOYAGE_BASE_URL=server.url, MAGUYVA_EMBEDDING_PROVIDER="voyage")  # fmt: skip
        subprocess.run([python, "-m", "maguyva.interfaces.cli.main", "index", "--modalities",
                        "text,semantic", "-q"], cwd=root, env=env, check=True)  # fmt: skip
        server.close()
        sent = "\n".join(t for r in server.requests for t in r["input"])
        hit = [shape for shape, (path, text, extra) in SHAPES.items()
               if path in sent or any(v in sent for v in secret_values(path, text, extra))]  # fmt: skip
        print(f"{len(hit)} of {len(SHAPES)} shapes sent: {hit}")


def reader(runs: int = 5) -> None:
    """`repo.reader.read_bytes` against `Path.read_bytes` over the standard library's files."""
    import sysconfig
    import time

    from maguyva.repo.reader import read_bytes

    root = Path(sysconfig.get_paths()["stdlib"])
    rels = [str(p.relative_to(root)) for p in sorted(root.rglob("*.py"))
            if "site-packages" not in p.parts]  # fmt: skip
    for name, read in (("Path.read_bytes", lambda r: (root / r).read_bytes()),
                       ("reader.read_bytes", lambda r: read_bytes(root, r))):  # fmt: skip
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            for rel in rels:
                read(rel)
            times.append(time.perf_counter() - started)
        median = sorted(times)[runs // 2]
        print(f"{name}: {len(rels)} files, median {median * 1e3:.1f} ms "
              f"({median / len(rels) * 1e6:.1f} us a file)")  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1:2] == ["leaks"]:
        leaks(tuple(sys.argv[2:]))
    elif sys.argv[1:2] == ["reader"]:
        reader()
    elif sys.argv[1:2] == ["secrets"]:
        secrets(sys.argv[2] if len(sys.argv) > 2 else sys.executable)
    else:
        sys.exit(__doc__)
