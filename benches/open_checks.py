"""What the integrity checks of an index cost, in ms (docs/durability-integrity.md, "Damage is loud").

Per fresh process, against an indexed repository: the checks the loaders make when they read
(text: every segment's header, section CRCs and document table; graph: the whole-file CRC of
`graph.bin` and `names.bin`; structural: its verifier over every segment, more than a reader
pays), then a full CRC-32 of each modality's files against CHECKSUMS and `maguyva status`'s
whole per-modality check. Prints the median and minimum of RUNS processes.

Run: `.venv/bin/python benches/open_checks.py PATH [RUNS]` (PATH indexed with text,
structural and graph).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
from pathlib import Path
from maguyva.build.fsck import modality_damage, modality_verifier
from maguyva.modalities.graph import store
from maguyva.modalities.text.modality import open_index
from maguyva.store.checksums import verify_generation
from maguyva.store.generations import IndexDir

gen = IndexDir(Path(sys.argv[1]) / ".maguyva").current()
out = {}

def timed(name, call):
    started = time.perf_counter()
    call()
    out[name] = (time.perf_counter() - started) * 1000

timed("text: open-time validation", lambda: open_index(gen.path / "text"))
timed("graph: whole-file CRCs", lambda: [store.read(gen.path / "graph", f)
                                         for f in ("graph.bin", "names.bin")])
timed("structural: verifier", lambda: modality_verifier("structural")(gen.path / "structural"))
for name in ("text", "structural", "graph"):
    timed(f"{name}: full CRC-32", lambda: verify_generation(gen.path, deep=True,
                                                            prefix=f"{name}/"))
timed("status: every modality", lambda: modality_damage(gen.path, gen.manifest))
timed("with verifiers", lambda: modality_damage(gen.path, gen.manifest, verifiers=True))
print(json.dumps(out))
"""


def main() -> None:
    path, runs = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 7
    rows = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True,
                             text=True, check=True)  # fmt: skip
        rows.append(json.loads(out.stdout))
    for key in rows[0]:
        values = [row[key] for row in rows]
        print(f"{key:28} median {statistics.median(values):8.2f} ms   min {min(values):8.2f} ms")


if __name__ == "__main__":
    main()
