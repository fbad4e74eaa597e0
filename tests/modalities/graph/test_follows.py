"""`graph_follows` (maguyva.build.follow): a small update commits its text, symbols and vectors first,
its graph one generation later. Readers between the two get the edit everywhere but the graph,
whose answers say they are behind; the second generation's graph is the one a from-scratch
build gives; a graph left behind (Ctrl-C, kill -9 between the commits) is built by the next
update. Real files: the standard library's json and email packages."""

from __future__ import annotations

import json
import random
import shutil
import signal
import time
from pathlib import Path

import pytest
from durability_support import CONFIG as DURABLE
from durability_support import MODALITIES, QUERIES, build, write_repo
from graph_support import assert_same_graph
from support import faults

from maguyva.build import follow
from maguyva.build.fsck import fsck
from maguyva.build.indexer import Indexer
from maguyva.build.watch import Watcher
from maguyva.interfaces.cli.main import main
from maguyva.modalities.registry import load_modality
from maguyva.query.engine import Engine
from maguyva.store.generations import IndexDir

STDLIB = Path(json.__file__).parent.parent
CONFIG = {"modalities": ["text", "structural", "graph"], "graph_follows": True}
NEW_FUNCTION = "\n\ndef follows_probe():\n    return py_scanstring('\"x\"', 1)\n"


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for package in ("json", "email"):
        shutil.copytree(STDLIB / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    return root


def _edit(root: Path) -> list[str]:
    path = root / "json/decoder.py"
    path.write_text(path.read_text() + NEW_FUNCTION)
    return ["json/decoder.py"]


def _from_scratch(root: Path, tmp_path: Path) -> Path:
    config = {**CONFIG, "graph_follows": False, "index_dir": str(tmp_path / "scratch")}
    Indexer(root, config=config).update(rebuild=True)
    return IndexDir(tmp_path / "scratch").current(pin=False).path


def test_a_small_update_is_searchable_before_its_graph(tmp_path: Path, monkeypatch) -> None:
    root = _repo(tmp_path)
    writer = Indexer(root, config=CONFIG)
    first = writer.update().generation
    index = IndexDir(root / ".maguyva")
    old_graph = (index.current(pin=False).path / "graph/graph.bin").stat().st_ino
    seen: dict[str, object] = {}
    inner = Indexer._follow_up

    def reader_between(self, generation, *args, **kwargs):
        engine = Engine.open(root)  # what a reader sees between the two commits
        seen["generation"] = engine.generation.number
        seen["behind"] = follow.behind(engine.generation.manifest)
        found = engine.search("follows_probe", modalities=["structural"]).results
        seen["structural"] = [r.path for r in found]
        graph = engine.searcher("graph")
        seen["note"] = engine.search("py_scanstring", modalities=["graph"]).notes
        seen["references"] = graph.references("JSONDecodeError")
        seen["graph_inode"] = (generation.path / "graph/graph.bin").stat().st_ino
        return inner(self, generation, *args, **kwargs)

    monkeypatch.setattr(Indexer, "_follow_up", reader_between)
    wall = time.perf_counter()
    summary = writer.update(hints=_edit(root))
    wall = time.perf_counter() - wall

    assert seen["generation"] == first + 1 and summary.generation == first + 2
    assert seen["behind"] == {"generation": first, "paths": ["json/decoder.py"]}
    assert seen["structural"][:1] == ["json/decoder.py"]  # the edit, before its graph
    assert seen["graph_inode"] == old_graph  # the same file, linked
    assert any("graph answers reflect generation" in n for n in seen["note"])  # type: ignore[union-attr]
    marks = {h.path: h.extra.get("graph_behind", False) for h in seen["references"]}  # type: ignore[attr-defined]
    assert marks["json/decoder.py"] is True and marks["json/__init__.py"] is False

    current = index.current(pin=False)
    assert follow.behind(current.manifest) is None and current.manifest["graph_of"] == first + 1
    assert summary.modalities["graph"]["built"] and "behind" not in summary.modalities["graph"]
    took = summary.timings_s  # the first commit is timed apart from the graph's
    assert 0 < took["searchable"] < took["searchable"] + took["graph"] <= wall
    assert {"graph_link", "graph_commit"} <= took.keys()
    engine = Engine.open(root)
    probe = engine.searcher("graph").callees("follows_probe")
    assert [h.symbol for h in probe][:1] == ["json.decoder.py_scanstring"]
    assert not engine.search("py_scanstring", modalities=["graph"]).notes
    assert_same_graph(current.path, _from_scratch(root, tmp_path))
    assert writer.update().noop  # nothing left to do


def test_a_graph_left_behind_is_built_by_the_next_update(tmp_path: Path, monkeypatch) -> None:
    root = _repo(tmp_path)
    writer = Indexer(root, config=CONFIG)
    writer.update()
    utils = root / "email/utils.py"
    utils.write_text(utils.read_text() + "\n\ndef behind_one():\n    return quote('x')\n")
    first = writer.update(hints=["email/utils.py"]).generation  # the writer remembers its graph

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C (or kill -9) between the two commits

    monkeypatch.setattr(Indexer, "_follow_up", interrupted)
    with pytest.raises(KeyboardInterrupt):
        writer.update(hints=_edit(root))
    monkeypatch.undo()
    index = IndexDir(root / ".maguyva")
    assert index.current(pin=False).number == first + 1  # searchable, graph behind
    assert follow.behind(index.current(pin=False).manifest) is not None

    # the same writer, another edit: a patch for it alone would miss json/decoder.py's
    utils.write_text(utils.read_text() + "\n\ndef behind_two():\n    return behind_one()\n")
    summary = writer.update(hints=["email/utils.py"])
    assert summary.generation == first + 2  # no graph to follow: built with the others
    current = index.current(pin=False)
    assert follow.behind(current.manifest) is None
    assert summary.modalities["graph"]["report"].get("mode") != "patch"  # built in full
    assert_same_graph(current.path, _from_scratch(root, tmp_path))
    assert writer.update().noop


def test_a_graph_behind_is_caught_up_even_when_nothing_changed(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    root = _repo(tmp_path)
    writer = Indexer(root, config=CONFIG)
    first = writer.update().generation
    monkeypatch.setattr(Indexer, "_follow_up", lambda self, *a, **k: (_ for _ in ()).throw(
        KeyboardInterrupt))  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        writer.update(hints=_edit(root))
    monkeypatch.undo()
    assert main(["status", "--root", str(root)]) == 0  # what `maguyva status` says of it
    assert "graph      built, behind: reflects generation" in capsys.readouterr().out
    fresh = Indexer(root, config=CONFIG)  # another process, nothing changed since
    summary = fresh.update()
    assert not summary.noop and summary.generation == first + 2
    assert follow.behind(IndexDir(root / ".maguyva").current(pin=False).manifest) is None
    assert fresh.update().noop


def test_one_shot_runs_commit_once_and_watchers_follow(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    config = {k: v for k, v in CONFIG.items() if k != "graph_follows"}
    writer = Indexer(root, config=config)
    first = writer.update().generation
    assert writer.update(hints=_edit(root)).generation == first + 1  # `maguyva index`: off
    assert Watcher(root, config=config).indexer.follows_by_default is True


# ---- kill -9 at every durable step of an update whose graph follows ----------------------

FOLLOW_CHILD = (
    "import sys; from pathlib import Path; from maguyva.build.indexer import Indexer; "
    "Indexer(Path(sys.argv[1]), config={config!r}).update(wait_for_lock=True)"
)


def _per_modality(root: Path) -> dict[str, list]:
    """Each durability query asked of each modality alone (a generation whose graph is behind
    answers text and structural questions from the new state, graph questions from the old)."""
    engine = Engine.open(root)
    return {
        m: [[(r.path, r.start_line, r.symbol) for r in engine.search(q, modalities=[m]).results]
            for q in QUERIES]
        for m in MODALITIES
    }  # fmt: skip


def _kill_steps(tmp_path: Path, every: bool) -> None:
    config = {**DURABLE, "graph_follows": True}
    goldens = {}
    for variant in (0, 1):
        golden = tmp_path / f"golden{variant}"
        write_repo(golden, variant)
        build(golden)
        goldens[variant] = _per_modality(golden)
    root = tmp_path / "repo"
    write_repo(root, 0)
    build(root)
    write_repo(root, 1)
    with faults.install(faults.FaultyFiles()) as layer:
        Indexer(root, config=config).update()
    total = layer.total
    assert follow.behind(IndexDir(root / ".maguyva").current(pin=False).manifest) is None
    # the commit points: the renames of the manifest (the first generation's, the graph's)
    switches = [i + 1 for i, (op, path) in enumerate(layer.log)
                if op == "rename" and Path(path).name.startswith("manifest.json")]  # fmt: skip
    assert len(switches) == 2, layer.log
    steps = list(range(1, total + 1))
    if not every:  # around both commit points, the first and last steps, and a few others
        around = {s + d for s in switches for d in (-1, 0, 1)} | {1, total}
        steps = sorted(around | set(random.Random(total).sample(steps, 3)))
    states = {"old": 0, "behind": 0, "new": 0}
    for step in steps:
        write_repo(root, 0)
        build(root)  # back to the old state, graph current
        write_repo(root, 1)
        child = faults.child(f"kill@{step}", str(root), code=FOLLOW_CHILD.format(config=config))
        _out, err = child.communicate(timeout=120)
        assert child.returncode in (0, -signal.SIGKILL), err.decode()[-2000:]
        manifest = IndexDir(root / ".maguyva").current(pin=False).manifest
        seen = _per_modality(root)
        if follow.behind(manifest) is not None:  # killed between the two commits
            states["behind"] += 1
            expected = {**goldens[1], "graph": goldens[0]["graph"]}
        else:
            state = 1 if seen == goldens[1] else 0
            states["new" if state else "old"] += 1
            expected = goldens[state]
        assert seen == expected, f"kill at step {step} of {total}"
        assert fsck(root / ".maguyva").ok, step
        build(root)  # the next writer (a one-shot run) catches the graph up
        assert _per_modality(root) == goldens[1], f"after the kill at step {step}"
    assert states["behind"] and states["old"], states  # both commits were interrupted


def test_kill9_around_the_commits_of_an_update_whose_graph_follows(tmp_path: Path) -> None:
    _kill_steps(tmp_path, every=False)


@pytest.mark.slow
def test_kill9_at_every_step_of_an_update_whose_graph_follows(tmp_path: Path) -> None:
    _kill_steps(tmp_path, every=True)


def test_the_semantic_backlog_follows_the_graph(tmp_path: Path, monkeypatch) -> None:
    """An index whose chunks are not all embedded yet (a cap, a time budget or a provider
    failure left a backlog): the first generation embeds the edit's chunks only, the graph
    follows, then the backlog in a generation of its own. The local model, real files."""
    root = _repo(tmp_path)
    config = {**CONFIG, "modalities": [*CONFIG["modalities"], "semantic"],
              "semantic_phases": "heads", "semantic_max_chunks": 40}  # fmt: skip
    writer = Indexer(root, config=config)
    first = writer.update().generation
    before = IndexDir(root / ".maguyva").current(pin=False).manifest
    pending = before["modalities"]["semantic"]["report"]["pending"]
    assert pending > 200  # 40 chunks embedded, the rest waits
    seen: dict[str, dict] = {}
    inner = Indexer._follow_up

    def spy(self, generation, name, *args, **kwargs):
        seen[name] = generation.manifest["modalities"]["semantic"]["report"]
        if name == "graph":  # a reader of the first generation finds the edit by meaning
            engine = Engine.open(root)
            hits = engine.search("follows_probe scanstring", modalities=["semantic"]).results
            seen["reader"] = {"top": hits[0].symbol if hits else None}
        return inner(self, generation, name, *args, **kwargs)

    monkeypatch.setattr(Indexer, "_follow_up", spy)
    summary = writer.update(hints=_edit(root))
    assert summary.generation == first + 3  # edit, graph, backlog
    edit = seen["graph"]  # the first generation's semantic build
    # the edited file's chunks without a vector (fewer than the cap: no backlog chunk)
    assert edit["backlog_left"] and 1 <= edit["new"] < 40
    assert seen["reader"]["top"] == "follows_probe"
    assert seen["semantic"] == edit  # the graph's generation keeps the first one's vectors
    last = summary.modalities["semantic"]["report"]
    assert (
        last["new"] == 40 and last["pending"] == edit["pending"] - 40
    )  # the cap, from the backlog
    current = IndexDir(root / ".maguyva").current(pin=False).manifest
    assert current["backlog_of"] == first + 2 and current["graph_of"] == first + 1
    assert follow.behind(current) is None and not follow.backlog(current)
    assert writer.update().noop


def test_added_deleted_and_renamed_files_follow_too(tmp_path: Path) -> None:
    """A small update that adds, deletes and renames files (the graph cannot be patched for
    those: it is built again, reusing the edge log) follows the same way, and its second
    generation's graph is a from-scratch build's."""
    root = _repo(tmp_path)
    writer = Indexer(root, config=CONFIG)
    first = writer.update().generation
    (root / "json/extra.py").write_text("from .decoder import JSONDecoder\n\n\n"
                                        "def extra():\n    return JSONDecoder().decode('1')\n")  # fmt: skip
    (root / "email/quoprimime.py").unlink()
    (root / "email/base64mime.py").rename(root / "email/b64.py")
    summary = writer.update()
    assert summary.generation == first + 2
    assert summary.changes["added"] + summary.changes["renamed"] >= 1
    current = IndexDir(root / ".maguyva").current(pin=False)
    assert follow.behind(current.manifest) is None
    assert summary.modalities["graph"]["report"].get("mode") != "patch"
    callers = Engine.open(root).searcher("graph").callers("JSONDecoder.decode")
    assert "json/extra.py" in {h.path for h in callers}
    assert_same_graph(current.path, _from_scratch(root, tmp_path))


def test_a_starting_watcher_prepares_its_writer(tmp_path: Path) -> None:
    """`update(prepare=True)` (what a watcher's first check does): nothing changed, yet a
    generation with the same answers is built, so that the graph and semantic builds keep
    their state in memory, and the graph's patch tables are built; the first edit after it
    is a patch whose graph equals a from-scratch build's."""
    root = _repo(tmp_path)
    Indexer(root, config=CONFIG).update()  # another process indexed it
    engine = Engine.open(root)
    before = [[(r.path, r.start_line) for r in engine.search(q, limit=5).results]
              for q in ("JSONDecoder", "who calls py_scanstring", "parse a header")]  # fmt: skip
    writer = Indexer(root, config=CONFIG)  # a watcher starts
    summary = writer.update(prepare=True)
    assert not summary.noop and "graph_prepare" in summary.timings_s
    memory = load_modality("graph")._memory
    assert memory.follows is not None and memory.order is not None  # the patch's tables
    # built once more as a patch, which leaves the next patch's merge order
    assert summary.modalities["graph"]["report"]["mode"] == "patch"
    assert memory.edge_tags is not None
    engine = Engine.open(root)
    assert before == [[(r.path, r.start_line) for r in engine.search(q, limit=5).results]
                      for q in ("JSONDecoder", "who calls py_scanstring", "parse a header")]  # fmt: skip
    edited = writer.update(hints=_edit(root))
    assert edited.modalities["graph"]["report"]["mode"] == "patch"
    current = IndexDir(root / ".maguyva").current(pin=False)
    assert_same_graph(current.path, _from_scratch(root, tmp_path))
    assert Indexer(root, config=CONFIG).update().noop  # another writer: nothing to do


def test_the_backlog_is_embedded_a_slice_at_a_time(tmp_path: Path, monkeypatch) -> None:
    """A backlog of hours (a large repository indexed under a cap or a budget) must not keep
    the watcher from the next edit: after an edit it is embedded under a time budget of
    `BACKLOG_SLICE_S` at most (or the configured one, if shorter); the edit's own chunks for
    `URGENT_SLICE_S` before the first commit."""
    from maguyva.modalities.semantic.modality import SemanticModality

    root = _repo(tmp_path)
    semantic = {**CONFIG, "modalities": [*CONFIG["modalities"], "semantic"],
                "semantic_phases": "heads"}  # fmt: skip
    first = Indexer(root, config={**semantic, "semantic_max_chunks": 40}).update().generation
    budgets: list[object] = []
    inner = SemanticModality.build

    def spy(self, ctx):
        budgets.append(ctx.config.get("semantic_time_budget_s"))
        return inner(self, ctx)

    monkeypatch.setattr(SemanticModality, "build", spy)
    writer = Indexer(root, config=semantic)  # no cap, no budget: all of it at once, unsliced
    summary = writer.update(hints=_edit(root))
    assert summary.generation == first + 3  # the edit, its graph, a slice of the backlog
    assert budgets == [follow.URGENT_SLICE_S, follow.BACKLOG_SLICE_S]
    assert summary.modalities["semantic"]["report"]["new"] > 0
    left = summary.modalities["semantic"]["report"]["pending"] > 0  # the slice ran out
    budgets.clear()
    writer.config["semantic_time_budget_s"] = 0.5  # a shorter budget configured: it wins
    path = root / "json/decoder.py"
    path.write_text(path.read_text() + "\n\ndef follows_again():\n    return 2\n")
    writer.update(hints=["json/decoder.py"])
    expected = [follow.URGENT_SLICE_S, 0.5] if left else [follow.URGENT_SLICE_S]
    assert budgets == expected  # no backlog left: no third build


def test_a_new_large_file_is_searchable_before_its_vectors(tmp_path: Path, monkeypatch) -> None:
    """A new file of hundreds of chunks (~8 s of the local model for a 3,000-line one): the
    first generation embeds them for a moment only, so its text and symbols do not wait; the
    backlog's generation embeds more (the edited files' chunks go first there)."""
    root = tmp_path / "repo"  # the json package alone: its first build embeds ~100 chunks
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    config = {**CONFIG, "modalities": [*CONFIG["modalities"], "semantic"]}
    writer = Indexer(root, config=config)
    first = writer.update().generation
    reports: list[dict] = []
    inner = Indexer._follow_up

    def spy(self, generation, name, *args, **kwargs):
        reports.append(generation.manifest["modalities"]["semantic"]["report"])
        return inner(self, generation, name, *args, **kwargs)

    source = (STDLIB / "email/_header_value_parser.py").read_text()
    (root / "json/agent_module.py").write_text(source)
    monkeypatch.setattr(Indexer, "_follow_up", spy)
    summary = writer.update()
    assert summary.generation == first + 3
    urgent = reports[0]  # the first generation's semantic build
    # a moment's worth, not all: how many fit in the moment depends on the machine
    assert urgent["backlog_left"] and urgent["pending"] > 0
    final = summary.modalities["semantic"]["report"]
    assert final["new"] > urgent["new"] and final["pending"] < urgent["pending"]
    engine = Engine.open(root)
    hits = engine.search("get_address_list", modalities=["structural"]).results
    assert hits and hits[0].path == "json/agent_module.py"


def test_preparing_still_builds_a_modality_new_to_the_index(tmp_path: Path) -> None:
    """A watcher started with a modality the index lacks (another configuration, a new
    model) builds it whole at its first check: preparing leaves out only work that is
    already done (a backlog), not a first build."""
    root = tmp_path / "repo"
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    Indexer(root, config=CONFIG).update()  # text, structural and graph only
    config = {**CONFIG, "modalities": [*CONFIG["modalities"], "semantic"]}
    summary = Indexer(root, config=config).update(prepare=True)
    report = summary.modalities["semantic"]["report"]
    assert report["embedded"] > 0 and report["pending"] == 0


def test_an_index_built_for_other_modalities_is_updated_whole(tmp_path: Path) -> None:
    """A small edit to an index built for other modalities (a modality added, a new model or
    builder) does not follow: one generation, the new modality built whole, not a slice."""
    root = tmp_path / "repo"
    shutil.copytree(STDLIB / "json", root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    first = Indexer(root, config=CONFIG).update().generation  # no semantic part
    config = {**CONFIG, "modalities": [*CONFIG["modalities"], "semantic"]}
    summary = Indexer(root, config=config).update(hints=_edit(root))
    assert summary.generation == first + 1
    report = summary.modalities["semantic"]["report"]
    assert report["embedded"] > 0 and report["pending"] == 0
