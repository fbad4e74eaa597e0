"""Train the built-in zstd dictionaries of the chunk and extraction rows (issue 21, the
index's size), or measure them on another index.

    python benches/row_dicts.py train GEN_DIR     # writes rust/src/py/dicts/{chunks,extract}-1.zdict
    python benches/row_dicts.py measure GEN_DIR   # bytes of every block's frame, without and with

`GEN_DIR` is a generation directory (`ROOT/.maguyva/gen-NNNNNN`). The shipped dictionaries were
trained on the CPython 3.11.7 standard library's generation (737 files, built by main at
`dc94e09`; 4 KiB each, dictionary ids 0x4D470001 and 0x4D470002) and measured on requests,
psutil and click (docs/index-size.md). A shipped dictionary is never retrained in place:
frames written with it must stay readable; a new one takes a new id and file name.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from maguyva import _core
from maguyva.store import blocks
from maguyva.support import sealed

KINDS = {"chunks": ("jsonl", 0x4D470001), "extract": ("json", 0x4D470002)}
OUT = Path(__file__).resolve().parents[1] / "rust" / "src" / "py" / "dicts"


def payloads(gen: Path, kind: str) -> list[bytes]:
    """Every block's decompressed frame (what the dictionary is used on) of one kind."""
    out = []
    for path in sorted((gen / kind).glob(f"*.{KINDS[kind][0]}")):
        data = sealed.read_sealed(path, kind, blocks.ROWS_VERSION)
        if not blocks.is_block(data):
            continue
        for _p, _n, at, size in blocks.blocks(data, path):
            one = data[at : at + size]
            clen, rlen, _count, _name_at, data_at = blocks._head(one, 0, path)
            out.append(_core.zstd_decompress(one[data_at : data_at + clen], rlen))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("train", "measure"))
    parser.add_argument("gen", type=Path)
    args = parser.parse_args(argv)
    for kind, (_ext, dict_id) in KINDS.items():
        rows = payloads(args.gen, kind)
        if args.action == "train":
            import zstandard  # a dependency of the dev extras' tools, only needed here

            trained = zstandard.train_dictionary(4096, rows, level=blocks.LEVEL, dict_id=dict_id)
            (OUT / f"{kind}-1.zdict").write_bytes(trained.as_bytes())
            print(f"{kind}: {len(rows)} blocks, dictionary {len(trained.as_bytes())} bytes")
            continue
        plain = sum(len(_core.zstd_compress(r, blocks.LEVEL)) for r in rows)
        packed = sum(len(_core.zstd_compress(r, blocks.LEVEL, kind)) for r in rows)
        print(f"{kind}: {len(rows)} blocks, frames {plain:,} bytes, with the dictionary {packed:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
