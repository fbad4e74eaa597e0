"""The static rows of a staged build's line windows, a batch at a time (`semantic.static_rows`,
issue 17): the same rows, in the same order, as embedding every window's text at once (what
`static_part.build_only` did, holding them all); the windows' texts cut in Rust from the
files' bytes (`StaticTokenizer.pool_spans`) pool as the texts built in Python do. Real code:
standard-library packages, one file with CRLF line ends, one not ASCII; the real table."""

from __future__ import annotations

import json
import shutil
import sysconfig
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from maguyva.build.indexer import build_index
from maguyva.build.previous import current_generation
from maguyva.modalities.semantic.embed import ProviderIdentity
from maguyva.modalities.semantic.embed.static import shared_provider, static_embed
from maguyva.modalities.semantic.static_part import FILES
from maguyva.modalities.semantic.static_rows import RowSink, build
from maguyva.modalities.semantic.texts import embed_text
from maguyva.store.chunks import SEGMENTS, segment_of
from maguyva.store.fileindex import read_file_index
from maguyva.store.generations import IndexDir
from maguyva.store.views import SegmentChunks

STDLIB = Path(sysconfig.get_paths()["stdlib"])


class Stop(Exception):
    """Raised as the second stage's extraction starts: the static rows of every window are
    the current generation then."""


def corpus(root: Path) -> Path:
    for name in ("json", "email", "http"):
        shutil.copytree(STDLIB / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    crlf = (STDLIB / "textwrap.py").read_bytes().replace(b"\n", b"\r\n")
    (root / "textwrap_crlf.py").write_bytes(crlf)
    return root


@pytest.fixture(scope="module")
def windows(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the repository, the generation of its windows' static rows)."""
    root = corpus(tmp_path_factory.mktemp("static-rows") / "repo")
    extracts = []

    def stop_at_stage_two(phase: str, done: int, total: int) -> None:
        if phase == "extract" and done == 0:
            extracts.append(total)
            if len(extracts) == 2:
                raise Stop

    with pytest.raises(Stop):
        build_index(root, config={"first_build_stages": True, "jobs": 1},
                    progress=stop_at_stage_two)  # fmt: skip
    generation = current_generation(IndexDir(root / ".maguyva"))
    assert generation is not None
    return root, generation.path


def view(gen_dir: Path) -> SegmentChunks:
    fi = read_file_index(gen_dir)
    counts = [0] * SEGMENTS
    for p, e in fi.index.items():
        counts[segment_of(p)] += e[2]
    return SegmentChunks(gen_dir, counts, fi.index, fi.delta)


def identity_of(gen_dir: Path) -> ProviderIdentity:
    meta = json.loads((gen_dir / "semantic" / "meta.json").read_text())
    return ProviderIdentity.from_dict(meta["provider"])


def stored(sem: Path) -> tuple[np.ndarray, np.ndarray, list[list[str]]]:
    return (np.load(sem / FILES[0]), np.load(sem / FILES[1]),
            json.loads((sem / FILES[2]).read_text()))  # fmt: skip


def test_the_rows_are_those_of_every_text_embedded_at_once(windows: tuple[Path, Path]) -> None:
    _root, gen = windows
    identity = identity_of(gen)
    chunks = view(gen)
    # the old way: every window's text built and held, rows in the paths' order
    by_path: dict[str, list[tuple[int, int, str]]] = {}
    texts: dict[str, str] = {}
    for chunk in chunks:
        by_path.setdefault(chunk.path, []).append((chunk.start_line, chunk.end_line, chunk.id))
        texts[chunk.id] = embed_text(chunk, identity)
    rows = [[key, path] for path, keys in sorted(by_path.items()) for *_, key in sorted(keys)]
    want = static_embed([texts[key] for key, _ in rows])
    codes, floats, ids = stored(gen / "semantic")
    assert ids == rows and len(rows) > 300
    assert any(not t.isascii() for t in texts.values())  # the general path ran too
    assert any(p == "textwrap_crlf.py" for _, p in rows)
    assert codes.shape == want.codes.shape and floats.dtype == np.float16
    assert want.floats is not None
    np.testing.assert_allclose(floats.astype(np.float32), want.floats, atol=2e-3)
    differ = np.unpackbits(codes ^ want.codes).sum()  # a sign of a near-zero float may flip
    assert differ <= codes.size * 8 // 10_000, differ


def test_rust_cuts_the_windows_as_python_builds_them(windows: tuple[Path, Path]) -> None:
    root, gen = windows
    identity = identity_of(gen)
    chunks = [c for c in view(gen) if c.path.startswith(("json/", "http/", "textwrap"))]
    paths = sorted({c.path for c in chunks})
    contents = [(root / p).read_bytes() for p in paths]  # the CRC-32s of the bytes cut from
    file_of = {p: i for i, p in enumerate(paths)}
    spans = [(file_of[c.path], c.start_line, c.end_line) for c in chunks]
    heads = [c.header or "" for c in chunks]
    provider = shared_provider()
    table, _ = provider._load()
    texts = [embed_text(c, identity) for c in chunks]
    pooled, tokens, left = provider._native.pool_spans(
        table.table, table.scales, table.weights, str(root), paths,
        [zlib.crc32(c) for c in contents], spans, heads, provider.max_length, 1024)  # fmt: skip
    crlf = {i for i, c in enumerate(chunks) if c.path == "textwrap_crlf.py"}
    assert crlf and crlf <= set(left)  # a file with \r: cut the general way
    assert set(left) == crlf | {i for i, t in enumerate(texts) if not t.isascii()}
    kept = [i for i in range(len(chunks)) if i not in set(left)]
    want, want_tokens = provider._pool([texts[i] for i in kept])
    assert np.array_equal(pooled[kept], want) and tokens == want_tokens
    assert not pooled[sorted(left)].any()  # left out: zero rows
    # bytes that are not the ones the spans were cut from are never pooled
    _, _, left = provider._native.pool_spans(
        table.table, table.scales, table.weights, str(root), paths, [0] * len(contents), spans,
        heads, provider.max_length, 1024)  # fmt: skip
    assert left == list(range(len(chunks)))
    # nor a file outside the root (a path that escapes it reads as nothing)
    outside = ["../" + p for p in paths]  # from email/, none of whose files are here
    crcs = [zlib.crc32(c) for c in contents]
    _, _, left = provider._native.pool_spans(
        table.table, table.scales, table.weights, str(root / "email"), outside, crcs, spans,
        heads, provider.max_length, 1024)  # fmt: skip
    assert left == list(range(len(chunks)))


def test_any_sequence_of_chunks_gives_the_same_rows(windows: tuple[Path, Path],
                                                    tmp_path: Path) -> None:  # fmt: skip
    _root, gen = windows
    identity = identity_of(gen)
    chunks: list[Any] = list(view(gen))[::-1]  # a list, in another order: the general path
    made = build(chunks, identity, tmp_path, lambda n: RowSink(tmp_path / FILES[0],
                 tmp_path / FILES[1], n, identity.width, identity.dim), lambda *a: None)  # fmt: skip
    codes, floats, ids = stored(gen / "semantic")
    assert [[k, p] for p, keys in made.by_path for k in keys] == ids
    assert made.static == len(ids)
    np.testing.assert_allclose(np.load(tmp_path / FILES[1]).astype(np.float32),
                               floats.astype(np.float32), atol=2e-3)  # fmt: skip
    differ = np.unpackbits(np.load(tmp_path / FILES[0]) ^ codes).sum()
    assert differ <= codes.size * 8 // 10_000, differ


def test_a_row_sink_writes_the_file_np_save_writes(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    floats = rng.standard_normal((1000, 384)).astype(np.float32)
    codes = np.packbits(floats > 0, axis=-1)
    sink = RowSink(tmp_path / "c.npy", tmp_path / "f.npy", 1000, 48, 384)
    order = rng.permutation(1000)
    from maguyva.modalities.semantic.embed.base import Embeddings

    for start in range(0, 1000, 300):  # batches of rows scattered over the file
        rows = sorted(order[start : start + 300].tolist())[::-1]
        sink.put(rows, Embeddings(codes[rows], floats[rows]))
    sink.close()
    np.save(tmp_path / "c0.npy", codes)
    np.save(tmp_path / "f0.npy", floats.astype(np.float16))
    assert (tmp_path / "c.npy").read_bytes() == (tmp_path / "c0.npy").read_bytes()
    assert (tmp_path / "f.npy").read_bytes() == (tmp_path / "f0.npy").read_bytes()
