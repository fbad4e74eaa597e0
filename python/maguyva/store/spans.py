"""Chunks stored as spans of their file: the text a chunk shares with the text index's stored
content is not kept twice (issue 21, "one copy of the content").

When a build spills a file's chunk rows (`build.spill`), it reads the file once more and
compares each chunk's text with lines `start_line..end_line` of those bytes as the chunker
numbers them (`extract.chunks.source_lines`, joined by `\\n`). The rows that match lose their
`text`; the block that holds the file's rows (`store.blocks`, mark 1) records which rows are
spans and the CRC-32 of the bytes they were cut from. The others keep their text: class
skeletons, line windows cut at a form feed or a lone `\\r`, a file that is not valid UTF-8
(decoded with replacement), a file that changed between its extraction and this read.

Reading a block back puts every span's text in again, byte for byte the row the extractor
wrote (text is a row's last field), so every reader of rows sees what it saw before. The
bytes come from the generation's text index (`_core.TextIndex.content`), checked against the
block's CRC; during a build, before the text index exists, from the work tree (the spill
registers the root of the generation being written), checked the same way. A file whose
bytes changed between this read and the text index's own read (an edit in the middle of a
build) fails the check: its spans are cut from the text index's bytes, which is what search
shows for the file, and the next update, which sees the edit, extracts it again.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

from maguyva import _core
from maguyva.errors import CorruptIndexError, MaguyvaError
from maguyva.extract.chunks import source_lines
from maguyva.support import sealed
from maguyva.support.once import OncePer

log = logging.getLogger(__name__)

TEXT_DIR = "text"
SEGMENTS_FILE = "segments.json"
SEGMENTS_KIND = "text_segments"
_TEXT_KEY = b', "text": '


def strip(rows: bytes, content: bytes) -> tuple[bytes, list[list[int]]] | None:
    """`rows` (one file's chunk lines) without the text of each row that is a span of
    `content`, and the spans `[[row, start_line, end_line], ...]`; None when no row is one
    (or `content` is not valid UTF-8)."""
    try:
        lines = file_lines(content.decode("utf-8"))
    except UnicodeDecodeError:
        return None
    out: list[bytes] = []
    spans: list[list[int]] = []
    for number, line in enumerate(rows.split(b"\n")[:-1]):
        row = json.loads(line)
        start, end, text = row["start_line"], row["end_line"], row["text"]
        suffix = _TEXT_KEY + json.dumps(text, ensure_ascii=False).encode() + b"}"
        if text and line.endswith(suffix) and "\n".join(lines[start - 1 : end]) == text:
            out.append(line[: -len(suffix)] + b"}")
            spans.append([number, start, end])
        else:
            out.append(line)
    if not spans:
        return None
    return b"".join(x + b"\n" for x in out), spans


def fill(rows: bytes, spans: list[list[int]], texts: list[bytes]) -> bytes:
    """The inverse of `strip`: span row `spans[i]` with its text again, `texts[i]` (a JSON
    string, `texts_of`)."""
    parts = rows.split(b"\n")
    for (number, _start, _end), text in zip(spans, texts, strict=True):
        parts[number] = parts[number][:-1] + _TEXT_KEY + text + b"}"
    return b"\n".join(parts)


def fill_row(row: bytes, text: bytes) -> bytes:
    """One span row (from `strip`) with its text (a JSON string)."""
    return row[:-1] + _TEXT_KEY + text + b"}"


def file_lines(text: str) -> list[str]:
    """`source_lines` of `text`, by one `split` when it holds no carriage return (most
    files)."""
    if "\r" in text:
        return source_lines(text)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# ---- where the bytes come from ---------------------------------------------------------------

_ROOTS: OrderedDict[Path, Path] = OrderedDict()
"""Generation directory being written -> the repository root its files are read from."""
_INDEXES: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
"""(text directory, identity of its segment list) -> the opened `_core.TextIndex`."""
_LOCK = threading.Lock()
_WARNED = OncePer()
"""Per generation directory (the last few), the files whose changed content was said."""


def register_root(gen_dir: Path, root: Path) -> None:
    """Spans of the generation being written in `gen_dir` are read from `root` until its
    text index exists (the views a build's modalities read)."""
    with _LOCK:
        _ROOTS[Path(gen_dir)] = Path(root)
        while len(_ROOTS) > 8:
            _ROOTS.popitem(last=False)


def read_segments(text_dir: Path) -> dict[str, Any] | None:
    """The segment list of a text index directory; None for an index of one segment written
    before segment lists existed."""
    path = text_dir / SEGMENTS_FILE
    if not path.exists():
        return None
    data = sealed.read_sealed_json(path, SEGMENTS_KIND)
    if not isinstance(data, dict) or not isinstance(data.get("segments"), list):
        raise CorruptIndexError(f"{path}: not a segment list")
    return data


def spec_tuples(data: dict[str, Any]) -> list[tuple[str, str, int, int, list[int]]]:
    return [
        (s["index"], s["content"], int(s["build_id"]), int(s["docs"]), list(s["deleted"]))
        for s in data["segments"]
    ]


def open_index(text_dir: Path, bm25: bool = True) -> Any:
    """The `_core.TextIndex` of a text directory (every segment validated; its BM25
    postings too unless `bm25` is False)."""
    data = read_segments(text_dir)
    if data is None:
        return _core.TextIndex(str(text_dir), bm25=bm25)
    try:
        specs = spec_tuples(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptIndexError(f"{text_dir / SEGMENTS_FILE}: bad segment entry ({exc})") from exc
    return _core.TextIndex(str(text_dir), segments=specs, bm25=bm25)


def _key(text_dir: Path) -> tuple[Any, ...]:
    try:
        st = os.stat(text_dir / SEGMENTS_FILE)
    except FileNotFoundError:
        st = os.stat(text_dir / "trigram.idx")
    return (str(text_dir), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def adopt(text_dir: Path, index: Any) -> None:
    """Let the chunk store cut spans from `index`, which a text searcher has just opened on
    `text_dir` (a second open would validate every segment again: ~10 ms on the stdlib)."""
    try:
        key = _key(text_dir)
    except OSError:
        return
    with _LOCK:
        _INDEXES.setdefault(key, index)
        while len(_INDEXES) > 4:
            _INDEXES.popitem(last=False)


def shared_index(text_dir: Path) -> Any:
    """`open_index`, opened once per process while the directory's segment list is the same
    file (generations are immutable), or the one a text searcher opened (`adopt`)."""
    key = _key(text_dir)
    with _LOCK:
        index = _INDEXES.get(key)
        if index is not None:
            _INDEXES.move_to_end(key)
            return index
    index = open_index(text_dir, bm25=False)  # spans need the content, not the postings
    with _LOCK:
        index = _INDEXES.setdefault(key, index)
        while len(_INDEXES) > 4:
            _INDEXES.popitem(last=False)
    return index


def _text_index(gen_dir: Path) -> Any | None:
    text_dir = gen_dir / TEXT_DIR
    if not (text_dir / SEGMENTS_FILE).exists():
        return None
    try:
        return shared_index(text_dir)
    except (MaguyvaError, OSError, ValueError):
        return None


def _from_root(gen_dir: Path, path: str) -> bytes | None:
    from maguyva.repo.reader import read_bytes

    with _LOCK:
        root = _ROOTS.get(gen_dir)
    if root is None:
        root = _manifest_root(gen_dir)
    if root is None:
        return None
    try:
        return read_bytes(root, path)
    except (OSError, MaguyvaError):
        return None


def _manifest_root(gen_dir: Path) -> Path | None:
    """The root a committed generation was built from (its `meta.json`), if it says."""
    try:
        root = json.loads(sealed.read_sealed(gen_dir / "meta.json", "meta")).get("root")
    except (OSError, MaguyvaError, ValueError, AttributeError):
        return None
    return Path(root) if isinstance(root, str) and root else None


def texts_of(gen_dir: Path, path: str, crc: int, ranges: list[tuple[int, int]]) -> list[bytes]:
    """The texts, as JSON strings, of lines `start..end` of each range of the bytes `path`'s
    spans were cut from: the text index's content (cut in Rust, `TextIndex.spans`), else the
    work tree's file, whichever has CRC-32 `crc` (a damaged text index is passed over: its
    own searches report the damage); when neither has (the file changed while it was
    indexed), the text index's, else the file's, else empty texts — logged once per file."""
    index = _text_index(gen_dir)
    try:
        found = index.spans(path, ranges) if index is not None else None
    except (MaguyvaError, OSError, ValueError):  # damaged content: the text modality says so
        found = None
    if found is not None and found[0] == crc:
        return list(found[1])
    data = _from_root(gen_dir, path)
    if data is not None and zlib.crc32(data) == crc:
        return _cut(data, ranges)
    if _WARNED.first(str(gen_dir), path):
        log.warning("chunks of %s: the stored content is not the one they were cut from (the "
                    "file changed while it was indexed); the next update re-extracts it",
                    path)  # fmt: skip
    if found is not None:
        return list(found[1])
    return _cut(data or b"", ranges)


def _cut(data: bytes, ranges: list[tuple[int, int]]) -> list[bytes]:
    lines = file_lines(data.decode("utf-8", errors="replace"))
    return [json.dumps("\n".join(lines[start - 1 : end]), ensure_ascii=False).encode()
            for start, end in ranges]  # fmt: skip


def generation_of(where: Path | str) -> Path:
    """The generation directory of a chunk segment or delta file (`GEN/chunks/NN.jsonl`,
    `GEN/delta/NNNNNN.chunks.jsonl`)."""
    return Path(where).parent.parent
