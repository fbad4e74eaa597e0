"""The text index's stored content: LZ4 (the default) beside zstd levels (issue 21, index size).

    MAGUYVA_TEXT_CACHE_MB=0 python benches/content_codec.py ROOT [--levels 0 1 3 6] [--rounds 5]

ROOT is indexed beforehand (`maguyva index`); its text index's files are built again into a
temporary directory once per level (`_core.build_text_index`, no chunks: the content and
the postings do not depend on them), and for each: `content.bin`'s size, the build's CPU,
and the CPU (`process_time`) of the questions a stored content serves: every line of `self`
(the issue's common literal, up to 100,000 lines), a literal in a few files, a literal in
none, and a regex — median of the rounds, levels interleaved. Run it with the content cache
off (`MAGUYVA_TEXT_CACHE_MB=0`), or the second round reads nothing from the content.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from maguyva import _core
from maguyva.store.generations import IndexDir
from maguyva.store.spans import open_index

QUESTIONS = (
    ("every line of self", "self", False, 100_000),
    ("literal, few files", "getaddrinfo", False, 1000),
    ("literal, no file", "zqxjkv_absent", False, 1000),
    ("regex", r"def \w+_index\(", True, 1000),
)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path)
    ap.add_argument("--levels", type=int, nargs="+", default=[0, 1, 3, 6])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    print(os.popen("uptime").read().strip(), "| cache MB:", os.environ.get("MAGUYVA_TEXT_CACHE_MB"))
    gen = IndexDir(args.root / ".maguyva").current(pin=False)
    paths = open_index(gen.path / "text").paths()
    with tempfile.TemporaryDirectory() as tmp:
        built = {}
        for level in args.levels:
            out = Path(tmp) / f"zstd{level}"
            t = time.process_time()
            report = _core.build_text_index(str(args.root), str(out), [(p, []) for p in paths],
                                            zstd_level=level)  # fmt: skip
            cpu = time.process_time() - t
            size = (out / "content.bin").stat().st_size
            built[level] = _core.TextIndex(str(out))
            print(f"level {level}: content.bin {size:,} bytes "
                  f"({size / report['content_bytes']:.3f}x of {report['content_bytes']:,}), "
                  f"build {cpu:.2f} CPU-s")  # fmt: skip
        times: dict[tuple[int, str], list[float]] = {}
        lines: dict[tuple[int, str], int] = {}
        for _ in range(args.rounds):
            for level, index in built.items():
                for name, pattern, regex, cap in QUESTIONS:
                    t = time.process_time()
                    files, _, _ = index.search(pattern, regex=regex, case="sensitive",
                                               max_lines=cap)  # fmt: skip
                    times.setdefault((level, name), []).append(time.process_time() - t)
                    lines[(level, name)] = sum(len(f[3]) for f in files)
        for name, *_ in QUESTIONS:
            row = "  ".join(f"level {lv}: {statistics.median(times[(lv, name)]) * 1e3:7.2f} ms"
                            for lv in built)  # fmt: skip
            print(f"{name:22s} ({lines[(args.levels[0], name)]} lines)  {row}")
    print(os.popen("uptime").read().strip())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
