"""Index size against the corpus, per kind of file (issue 21, "one copy of the content").

    python benches/index_size.py ROOT [ROOT ...] [--index-dir DIR]

Reads the index of each ROOT (`ROOT/.maguyva` unless `--index-dir`), takes the current
generation from its manifest, and prints one row per kind of file: bytes on disk and the
ratio to the corpus (the bytes of the indexed files, from the generation's file state). Each
inode is counted once (generations hard-link what they share); `cache/` and the older
generations still on disk are shown apart. Reads files only: it imports nothing of Maguyva,
so it measures an index written by any version.

`--sections` also lists each graph file's sections (name, stored type, element count, bytes
on disk, `zstd` when stored compressed, `steps` for offsets stored as their steps) and each text segment's (`*.idx`: trigram index,
`*.bm25`: BM25 postings; format version, counts, bytes per section), read from the headers.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import zlib
from pathlib import Path

KINDS = (
    ("chunk store", ("chunks/", "delta/*.chunks", "chunks.jsonl")),
    ("extraction", ("extract/", "delta/*.extract", "extract.json")),
    ("text content", ("text/*.bin",)),
    ("text postings", ("text/*.idx",)),
    ("BM25 postings", ("text/*.bm25",)),
    ("structural", ("structural/",)),
    ("graph", ("graph/",)),
    ("file state, meta, checksums", ("",)),
)


def _kind(rel: str) -> str:
    for name, patterns in KINDS:
        for pattern in patterns:
            if not pattern:
                return name
            if pattern.endswith("/") and rel.startswith(pattern):
                return name
            if "*" in pattern:
                folder, tail = pattern.split("*")
                if rel.startswith(folder) and tail in rel[len(folder) :]:
                    return name
            if rel == pattern:
                return name
    return KINDS[-1][0]


def _payload(path: Path) -> dict:
    """A sealed JSON file's payload (the header line skipped; zlib-packed or plain)."""
    data = path.read_bytes()
    payload = data[data.index(b"\n") + 1 :]
    return json.loads(zlib.decompress(payload) if payload[:1] == b"x" else payload)


def corpus_bytes(gen: Path) -> tuple[int, int]:
    """(files, bytes) of the generation's indexed files."""
    files = _payload(gen / "files.json")["state"]["files"]
    delta = gen / "files-delta.json"
    if delta.exists():
        change = _payload(delta)["state"]["files"]
        for p in change["del"]:
            files.pop(p, None)
        files.update(change["set"])
    return len(files), sum(int(v[0]) for v in files.values())


def measure(index: Path) -> dict:
    manifest = _payload(index / "manifest.json")
    gen = (
        index / manifest["dir"]
        if "dir" in manifest
        else index / f"gen-{manifest['generation']:06d}"
    )
    seen: set[tuple[int, int]] = set()
    sizes: dict[str, int] = {name: 0 for name, _ in KINDS}
    for path in sorted(gen.rglob("*")):
        st = path.lstat()
        if not path.is_file() or (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        sizes[_kind(path.relative_to(gen).as_posix())] += st.st_size
    current = sum(sizes.values())
    cache = others = 0
    for path in index.rglob("*"):
        st = path.lstat()
        if not path.is_file() or (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        if path.relative_to(index).parts[0] == "cache":
            cache += st.st_size
        else:
            others += st.st_size
    n_files, corpus = corpus_bytes(gen)
    return {"index": str(index), "generation": gen.name, "files": n_files, "corpus": corpus,
            "kinds": sizes, "generation_total": current, "cache": cache,
            "other_generations_and_leftovers": others}  # fmt: skip


def graph_sections(gen: Path) -> list[tuple[str, str, str, int, int, str]]:
    """(file, section, dtype, elements, bytes stored, compressed) of every graph file: the
    header of format 1-4 (`MGVGRAPH`, u32 version, u32 header length, JSON header)."""
    rows = []
    for path in sorted((gen / "graph").glob("*.bin")):
        with open(path, "rb") as fh:
            head = fh.read(16)
            if head[:8] != b"MGVGRAPH":
                continue
            _version, hlen = struct.unpack_from("<II", head, 8)
            header = json.loads(fh.read(hlen))
        for row in header["sections"]:
            name, dtype, size = row[0], row[1], row[2]
            stored = row[4] if len(row) >= 5 else size * int(dtype.lstrip("<>|")[1:])
            how = "  zstd steps" if len(row) == 6 else "  zstd" if len(row) == 5 else ""
            rows.append((path.name, name, dtype, size, stored, how))
    return rows


TEXT_SECTIONS = {
    b"MGVTRIDX": ("docs trigrams chunks", ("paths", "docs", "trigrams", "postings", "chunks",
                                            "chunk ids", "block filters")),
    b"MGVBM25P": ("docs units words grams", ("units", "words", "vocabulary", "postings",
                                              "grams", "gram ids")),
}  # fmt: skip


def text_sections(gen: Path) -> list[str]:
    """One line per text segment file (version and counts), then one per section: the
    header of every trigram index and BM25 postings format (magic, u32 version, u32
    counts, then from byte 40 the sections as u64 offset, u64 length, u32 CRC, u32; the first
    section's last word 1: packed, the sections one zstd frame, trigram format 8 / BM25 3)."""
    out = []
    for path in sorted((gen / "text").glob("*")):
        head = path.read_bytes()[: 40 + 7 * 24] if path.suffix in (".idx", ".bm25") else b""
        if head[:8] not in TEXT_SECTIONS:
            continue
        counts, names = TEXT_SECTIONS[head[:8]]
        version, *values = struct.unpack_from("<" + "I" * (1 + len(counts.split())), head, 8)
        got = ", ".join(f"{n} {v:,}" for n, v in zip(counts.split(), values, strict=True))
        packed = struct.unpack_from("<I", head, 40 + 20)[0] == 1  # section 0's reserved word
        got += f", packed: {path.stat().st_size:,} bytes on disk" if packed else ""
        out.append(f"    {path.name}: version {version}, {got}")
        for i, name in enumerate(names):
            length = struct.unpack_from("<Q", head, 40 + i * 24 + 8)[0]
            out.append(f"      {name:<20} {length:>12,}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--index-dir", type=Path, action="append", default=[])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sections", action="store_true", help="each graph file's sections")
    args = parser.parse_args(argv)
    indexes = args.index_dir or [r / ".maguyva" for r in args.roots]
    results = [measure(i) for i in indexes]
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for r in results:
        corpus = r["corpus"]
        print(f"{r['index']} ({r['generation']}): {r['files']} files, corpus {corpus:,} bytes")
        rows = [*r["kinds"].items(), ("generation total", r["generation_total"]),
                ("cache/", r["cache"]),
                ("older generations, leftovers", r["other_generations_and_leftovers"])]  # fmt: skip
        for name, size in rows:
            print(f"  {name:<30} {size:>12,}  {size / corpus:6.3f}x")
        if args.sections:
            index = Path(r["index"])
            for file, name, dtype, size, stored, packed in graph_sections(index / r["generation"]):
                print(f"    {file:<12} {name:<22} {dtype:<4} {size:>10,} {stored:>10,}{packed}")
            print("\n".join(text_sections(index / r["generation"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
