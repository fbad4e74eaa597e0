"""The semantic modality end to end on real standard-library code, with the real local model."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from maguyva.errors import ConfigError, ModalityUnavailable, ModelMismatchError
from maguyva.extract.chunks import chunk_id
from maguyva.modalities.protocol import BuildContext, RetrieverQuery
from maguyva.modalities.semantic.embed import MiniLMProvider, ProviderIdentity
from maguyva.modalities.semantic.embed.base import EmbeddingProvider, Embeddings
from maguyva.modalities.semantic.modality import MODALITY, SemanticModality
from maguyva.modalities.semantic.search import SemanticSearcher
from maguyva.modalities.semantic.texts import embed_text, head_text, own_head
from maguyva.model import Chunk
from maguyva.store.chunks import write_chunks

STDLIB = Path(sysconfig.get_paths()["stdlib"])
MODALITY_IDENTITY = MiniLMProvider().identity
FILES = ("shlex.py", "fnmatch.py", "base64.py", "colorsys.py")


def function_chunks(limit: int = 40) -> tuple[list[Chunk], dict[str, str]]:
    """One chunk per top-level function (docstring removed) and its docstring's first line."""
    chunks, docs = [], {}
    for name in FILES:
        source = (STDLIB / name).read_text(encoding="utf-8")
        lines = source.splitlines()
        for node in ast.parse(source).body:
            if not isinstance(node, ast.FunctionDef) or len(chunks) >= limit:
                continue
            doc = ast.get_docstring(node)
            body = lines[node.lineno - 1 : node.end_lineno]
            if doc and isinstance(node.body[0], ast.Expr):
                first, last = node.body[0].lineno, node.body[0].end_lineno
                body = lines[node.lineno - 1 : first - 1] + lines[last : node.end_lineno]
            text = "\n".join(body)
            cid = chunk_id(name, text, node.name)
            chunks.append(
                Chunk(id=cid, path=name, start_line=node.lineno, end_line=node.end_lineno,
                      kind="function", name=node.name, qualified_name=node.name,
                      header=f"{name} {node.name}", text=text)
            )  # fmt: skip
            if doc:
                docs[cid] = doc.split("\n")[0]
    return chunks, docs


def make_ctx(
    tmp: Path, chunks: list[Chunk], cache: Path | None = None, **config: object
) -> BuildContext:
    out = tmp / "gen"
    out.mkdir(parents=True, exist_ok=True)
    write_chunks(out, chunks)
    return BuildContext(root=tmp, out_dir=out, files=[], chunks=chunks, extraction={},
                        config=dict(config), cache_dir=cache or tmp / "cache")  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("semantic")
    chunks, docs = function_chunks()
    report = MODALITY.build(make_ctx(tmp, chunks))
    return tmp, report, docs


def query(text: str, snippet: str | None = None) -> RetrieverQuery:
    return RetrieverQuery(text=text, intent="understand_code", target=text, snippet=snippet)


def test_build_writes_codes_ids_and_identity(built) -> None:
    tmp, report, _ = built
    d = tmp / "gen" / "semantic"
    codes = np.load(d / "codes.npy")
    ids = json.loads((d / "ids.json").read_text())
    meta = json.loads((d / "meta.json").read_text())
    assert codes.shape == (len(ids), 48) and codes.dtype == np.uint8
    assert report["embedded"] == len(ids) == report["chunks"] and report["pending"] == 0
    assert meta["provider"]["model_id"].startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert meta["provider"]["bit_order"] == "msb-first" and meta["rescore"]
    assert report["chunks_per_s"] > 0


def test_docstring_queries_find_their_function(built) -> None:
    tmp, _, docs = built
    searcher = MODALITY.open(tmp / "gen", {})
    assert isinstance(searcher, SemanticSearcher) and searcher.modality == "semantic"
    reciprocal = []
    for cid, doc in docs.items():
        keys = [h.key for h in searcher.search(query(doc), 10)]
        reciprocal.append(1 / (keys.index(cid) + 1) if cid in keys else 0.0)
    # Measured MRR@10 here is well above what chance gives on ~40 chunks (about 0.1).
    assert np.mean(reciprocal) > 0.5
    hits = searcher.search(query("split a string using shell-like syntax"), 3)
    assert hits[0].path == "shlex.py" and hits[0].symbol == "split"
    assert hits[0].score is not None and -1 <= hits[0].score <= 1
    assert hits[0].extra["hamming"] >= 0


def test_rebuild_reuses_the_cache(built) -> None:
    tmp, first, _ = built
    chunks, _ = function_chunks()
    loads = MiniLMProvider.total_loads
    again = SemanticModality().build(
        make_ctx(tmp / "again", chunks, tmp / "cache", semantic_max_chunks=0)
    )
    assert again["new"] == 0 and again["pending"] == 0  # not one chunk re-embedded
    assert again["from_cache"] == first["embedded"]
    assert MiniLMProvider.total_loads == loads  # the model was not even loaded


def test_cap_leaves_pending(tmp_path: Path) -> None:
    chunks, _ = function_chunks(limit=6)
    report = SemanticModality().build(make_ctx(tmp_path, chunks, semantic_max_chunks=2))
    meta = json.loads((tmp_path / "gen" / "semantic" / "meta.json").read_text())
    assert report["new"] + report["from_cache"] == report["embedded"]
    assert (
        report["embedded"] + report["pending"] == 6
        and len(meta["pending_ids"]) == report["pending"]
    )


class OtherModel(EmbeddingProvider):
    @property
    def identity(self) -> ProviderIdentity:
        return ProviderIdentity(provider="voyage", model_id="voyage-code-3", dim=1024)

    def embed(self, texts, input_type) -> Embeddings:
        raise AssertionError("must not be called")


def test_other_model_is_refused(built) -> None:
    tmp, _, _ = built
    with pytest.raises(ModelMismatchError, match="voyage-code-3"):
        MODALITY.open(tmp / "gen", {}, provider=OtherModel())
    with pytest.raises(ModelMismatchError):
        SemanticModality(lambda config: OtherModel()).open(tmp / "gen", {})


def test_not_built_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(ModalityUnavailable):
        MODALITY.open(tmp_path, {})


def test_empty_corpus_and_empty_query(tmp_path: Path) -> None:
    SemanticModality().build(make_ctx(tmp_path, []))
    searcher = SemanticModality().open(tmp_path / "gen", {})
    assert searcher.search(query("anything"), 5) == []
    assert searcher.search(query("   "), 5) == []


def test_exact_match_never_loads_the_model(tmp_path: Path) -> None:
    from maguyva.build.indexer import build_index
    from maguyva.query.engine import Engine

    for name in FILES[:2]:
        shutil.copy(STDLIB / name, tmp_path / name)
    build_index(tmp_path, config={"modalities": ["text", "semantic"], "semantic_max_chunks": 3})
    engine = Engine.open(tmp_path)
    loads = MiniLMProvider.total_loads
    response = engine.search('"No escaped character"', preset="default")
    assert response.intent == "exact_match" and "semantic" not in response.modalities
    assert MiniLMProvider.total_loads == loads
    quick = engine.search("how are shell words split", preset="quick")
    assert quick.modalities == ["semantic"] and quick.results


def test_warm_readers_and_prepared_writers_have_their_model_loaded(tmp_path: Path) -> None:
    """`Engine.warm` (a server's startup) loads the query model, and a writer prepared by
    `update(prepare=True)` (a watcher's start) its document model, so that neither the first
    question by meaning nor the first edit waits for it; opening alone never loads it. Each
    in a fresh process (the model is kept process-wide)."""
    from maguyva.build.indexer import Indexer

    for name in FILES[:2]:
        shutil.copy(STDLIB / name, tmp_path / name)
    config = {"modalities": ["text", "semantic"], "semantic_max_chunks": 3}
    Indexer(tmp_path, config=config).update()
    reader = (
        "import sys; from pathlib import Path; from maguyva.query.engine import Engine; "
        "e = Engine.open(Path(sys.argv[1])); s = e.searcher('semantic'); "
        "print(s.provider.loaded, end=' '); e.warm(); print(s.provider.loaded)"
    )
    writer = (
        "import sys; from pathlib import Path; from maguyva.build.indexer import Indexer; "
        "from maguyva.modalities.semantic.modality import MODALITY; "
        f"r = Indexer(Path(sys.argv[1]), config={config!r}).update(prepare=True); "
        "print('semantic_prepare' in r.timings_s, MODALITY._kept[1].loaded)"
    )
    for code, expected in ((reader, "False True"), (writer, "True True")):
        run = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                             text=True, check=True)  # fmt: skip
        assert run.stdout.strip() == expected, run.stderr[-2000:]


def test_heads_first_then_bodies(tmp_path: Path) -> None:
    """Phase one gives every chunk a (head) vector; the next full build replaces only those
    whose head is not the whole chunk, and the report says what was partial."""
    chunks, _ = function_chunks(limit=12)
    texts = {c.id: embed_text(c, MODALITY_IDENTITY) for c in chunks}
    long = {c.id for c in chunks if own_head(texts[c.id], head_text(c)) is not texts[c.id]}
    assert 0 < len(long) < len(chunks)  # both kinds present, or the test proves nothing
    cache = tmp_path / "cache"
    first = SemanticModality().build(
        make_ctx(tmp_path / "a", chunks, cache, semantic_phases="heads")
    )
    meta = json.loads((tmp_path / "a" / "gen" / "semantic" / "meta.json").read_text())
    assert first["phases"] == "heads" and first["pending"] == 0
    assert first["partial"] == len(long) and set(meta["partial_ids"]) == long
    assert first["new"] == len(chunks)  # one head per chunk (short chunks: the head is all)
    heads_only = SemanticModality().open(tmp_path / "a" / "gen", {})
    assert heads_only.search(query("split a string using shell-like syntax"), 3)
    second = SemanticModality().build(
        make_ctx(tmp_path / "b", chunks, cache, semantic_phases="full")
    )
    assert second["partial"] == 0 and second["pending"] == 0 and second["new"] == len(long)


def test_heads_first_queue_order(tmp_path: Path) -> None:
    chunks, _ = function_chunks(limit=12)
    report = SemanticModality().build(
        make_ctx(tmp_path, chunks, semantic_phases="heads-first", semantic_max_chunks=len(chunks))
    )
    # The cap is spent on heads first: every chunk is searchable, the long bodies are pending.
    assert report["pending"] == 0 and report["partial"] > 0


def test_bad_phases_setting(tmp_path: Path) -> None:
    chunks, _ = function_chunks(limit=2)
    with pytest.raises(ConfigError, match="semantic_phases"):
        SemanticModality().build(make_ctx(tmp_path, chunks, semantic_phases="bodies"))


def test_rebuild_reuses_previous_rows_without_the_cache(tmp_path: Path) -> None:
    """An incremental build copies the previous generation's rows by content hash: with an
    empty cache, only the changed chunk is embedded."""
    chunks, _ = function_chunks(limit=8)
    SemanticModality().build(make_ctx(tmp_path / "a", chunks, tmp_path / "cache-a"))
    old = tmp_path / "a" / "gen"
    changed = Chunk(id="changed", path="x.py", start_line=1, end_line=2, kind="function",
                    name="tokens", header="x.py: function tokens", text="def tokens(s):\n    return s.split()")  # fmt: skip
    ctx = make_ctx(tmp_path / "b", [*chunks[1:], changed], tmp_path / "cache-b")
    ctx.previous_dir = old
    report = SemanticModality().build(ctx)
    assert report["new"] == 1 and report["reused_rows"] == len(chunks) - 1
    new_dir = tmp_path / "b" / "gen" / "semantic"
    a_ids = json.loads((old / "semantic" / "ids.json").read_text())
    b_ids = json.loads((new_dir / "ids.json").read_text())
    a_codes, b_codes = np.load(old / "semantic" / "codes.npy"), np.load(new_dir / "codes.npy")
    a_floats, b_floats = np.load(old / "semantic" / "floats.npy"), np.load(new_dir / "floats.npy")
    for i, cid in enumerate(b_ids):
        if cid in a_ids:
            np.testing.assert_array_equal(b_codes[i], a_codes[a_ids.index(cid)])
            np.testing.assert_array_equal(b_floats[i], a_floats[a_ids.index(cid)])
    # A previous generation built with another identity is never reused.
    ctx = make_ctx(tmp_path / "c", chunks, tmp_path / "cache-c", embedding_max_length=64)
    ctx.previous_dir = old
    assert SemanticModality().build(ctx)["reused_rows"] == 0
