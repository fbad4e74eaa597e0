"""Incremental indexing equals a from-scratch build; no-op checks do no work; changes are
classified (edit, add, delete, rename, touch) the way git would see them."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from durability_support import CONFIG, answers, build, write_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maguyva import _core
from maguyva.build.fsck import fsck
from maguyva.build.indexer import build_index
from maguyva.repo.changes import (
    blob_digest,
    classify,
    estimate_distinct_trigrams,
    git_digests,
    scan,
)
from maguyva.store.fileindex import stored_rows
from maguyva.store.generations import IndexDir


def _snapshot(index_dir: Path) -> tuple:
    """Chunks, extraction and the symbol index of the current generation, as stored (the
    symbol index byte for byte: an update must write what a from-scratch build writes)."""
    gen = IndexDir(index_dir).current()
    chunks, extract = stored_rows(gen.path)
    symbols = {p.name: p.read_bytes() for p in sorted(gen.path.glob("structural/*"))}
    assert symbols, "no symbol index"
    return chunks, extract, symbols


EDITS = st.lists(
    st.tuples(
        st.sampled_from(["edit", "add", "delete", "rename", "touch", "switch"]),
        st.integers(0, 50),
    ),
    min_size=1,
    max_size=3,
)


@given(EDITS)
@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_incremental_equals_from_scratch(tmp_path_factory, edits):
    root = tmp_path_factory.mktemp("repo")
    write_repo(root)
    build(root)
    for op, n in edits:
        files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")
                       if ".maguyva" not in p.parts)  # fmt: skip
        target = root / files[n % len(files)]
        if op == "edit":
            target.write_text(target.read_text() + f"\n\ndef added_{n}(x):\n    return x + {n}\n")
        elif op == "add":
            (root / f"pkg/new_{n}.py").write_text(f"from .core import load_items\n\n\n"
                                                  f"def new_{n}():\n    return load_items({n})\n")  # fmt: skip
        elif op == "delete" and len(files) > 1:
            target.unlink()
        elif op == "rename":
            target.rename(target.with_name(f"moved_{n}.py"))
        elif op == "touch":
            os.utime(target, ns=(target.stat().st_atime_ns, target.stat().st_mtime_ns + 10**9))
        elif op == "switch":
            write_repo(root, n % 4)  # a branch switch: many files change at once
        summary = build(root)
        if not summary.noop:
            structural = summary.modalities["structural"]["report"]
            assert structural["mode"] == "incremental", structural
            c = summary.changes
            moved = c["added"] + c["modified"] + c["deleted"] + 2 * c["renamed"]
            assert structural["segments_written"] <= moved, (structural, c)
        scratch = root.parent / (root.name + "-scratch")
        shutil.rmtree(scratch, ignore_errors=True)
        build_index(root, config={**CONFIG, "index_dir": str(scratch)})
        assert _snapshot(root / ".maguyva") == _snapshot(scratch), (op, n, summary.changes)
        assert answers(root) == answers(root, scratch), (op, n)


def test_noop_and_touch_do_no_work(tmp_path):
    write_repo(tmp_path)
    old = time.time_ns() - 60 * 10**9  # files written a minute ago: not "racy" (see changes.py)
    for path in tmp_path.rglob("*"):
        os.utime(path, ns=(old, old))
    first = build(tmp_path)
    again = build(tmp_path)
    assert again.noop and again.generation == first.generation, again.changes
    core = tmp_path / "pkg" / "core.py"
    os.utime(core, ns=(old + 10**9, old + 10**9))
    touched = build(tmp_path)
    assert touched.noop, touched.changes  # same content: nothing to do
    assert build(tmp_path).changes["hashed"] == 0  # the touch was remembered


def test_new_builder_code_is_not_a_noop(tmp_path, monkeypatch):
    """After an upgrade that changes a modality's builder or on-disk format, `maguyva index`
    on an unchanged tree rebuilds (or updates) the parts instead of keeping a generation that
    the new code may not read."""
    import maguyva.build.indexer

    write_repo(tmp_path)
    old = time.time_ns() - 60 * 10**9
    for path in tmp_path.rglob("*"):
        os.utime(path, ns=(old, old))
    first = build(tmp_path)
    before = answers(tmp_path)
    assert any(before) and build(tmp_path).noop
    monkeypatch.setattr(maguyva.build.indexer, "builders_fingerprint", lambda: "another builder")
    upgraded = build(tmp_path)
    assert not upgraded.noop and upgraded.generation == first.generation + 1
    assert build(tmp_path).noop
    assert answers(tmp_path) == before  # the new generation serves the same answers


def test_change_kinds_are_classified(tmp_path):
    write_repo(tmp_path)
    build(tmp_path)
    (tmp_path / "pkg" / "render.py").rename(tmp_path / "pkg" / "show.py")
    (tmp_path / "pkg" / "core.py").write_text("def x():\n    return 1\n")
    (tmp_path / "README.md").unlink()
    (tmp_path / "pkg" / "extra.py").write_text("def extra():\n    return 3\n")
    summary = build(tmp_path)
    assert summary.changes == {"added": 1, "modified": 1, "deleted": 1, "renamed": 1,
                               "walked": True, "hashed": summary.changes["hashed"]}  # fmt: skip
    assert "show.py" in str(answers(tmp_path))


def test_file_turning_binary_or_huge_leaves_the_index(tmp_path):
    write_repo(tmp_path)
    build(tmp_path)
    (tmp_path / "pkg" / "render.py").write_bytes(b"def f():\n    return 1\n\0")
    summary = build(tmp_path)
    assert summary.skipped.get("binary") == 1 and summary.changes["deleted"] == 1
    (tmp_path / "pkg" / "render.py").write_text("def back():\n    return 2\n")
    assert build(tmp_path).changes["added"] == 1


def test_python_classification_matches_the_walker(tmp_path):
    rng = np.random.default_rng(7)
    samples = {
        "random.txt": rng.integers(33, 127, 200_000, dtype=np.uint8).tobytes(),
        "code.py": (Path(__file__).read_bytes() * 5),
        "nul.py": b"x = 1\n\0",
        "b64.txt": np.char.encode(rng.choice(list("ABCDEFabcdef0123456789+/"), 60_000)).tobytes(),
    }
    for name, data in samples.items():
        (tmp_path / name).write_bytes(data)
    files, skipped = _core.walk_files(str(tmp_path), max_file_bytes=1 << 20, allow_large=[],
                                      follow_symlinks=False, max_trigrams=20_000)  # fmt: skip
    walker = {p: None for p, _s, _m in files} | dict(skipped)
    for name, data in samples.items():
        assert classify(name, len(data), data, {}) == walker[name], name
    assert estimate_distinct_trigrams(b"abcabcabc") <= 4


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_blob_ids_are_used_and_agree_with_hashing(tmp_path):
    write_repo(tmp_path)
    run = {"cwd": tmp_path, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)
    subprocess.run(["git", "add", "."], **run)
    known = git_digests(tmp_path)
    assert known and all(blob_digest((tmp_path / p).read_bytes()) == d for p, d in known.items())
    (tmp_path / "pkg" / "core.py").write_text("changed = True\n")
    assert "pkg/core.py" not in (git_digests(tmp_path) or {})  # dirty: hashed by us instead
    state, changes = scan(tmp_path, {}, None)
    assert changes.reason == "first build" and len(changes.added) == len(state.files)
    assert state.files["pkg/core.py"][2] == blob_digest(b"changed = True\n")


def test_file_in_new_nested_empty_directory_is_found(tmp_path):
    write_repo(tmp_path)
    build(tmp_path)
    (tmp_path / "newdir" / "deeper").mkdir(parents=True)
    assert build(tmp_path).noop
    (tmp_path / "newdir" / "deeper" / "leaf.py").write_text("def leaf():\n    return 1\n")
    assert build(tmp_path).changes["added"] == 1


def test_file_under_a_directory_of_only_ignored_files_is_found(tmp_path):
    """`obj/` and `obj/sub/` hold only ignored files when the index is built; a source file
    created later in `obj/sub/` must be noticed without walking (the stat pass)."""
    write_repo(tmp_path)
    (tmp_path / ".gitignore").write_text("*.o\nnode_modules/\n")
    (tmp_path / "obj" / "sub").mkdir(parents=True)
    (tmp_path / "obj" / "a.o").write_text("x")
    (tmp_path / "obj" / "sub" / "b.o").write_text("x")
    (tmp_path / "node_modules" / "dep" / "lib").mkdir(parents=True)
    (tmp_path / "node_modules" / "dep" / "lib" / "index.js").write_text("exports.x = 1;\n")
    build(tmp_path)
    assert build(tmp_path).noop
    (tmp_path / "obj" / "sub" / "new.py").write_text("def under_ignored():\n    return 1\n")
    summary = build(tmp_path)
    assert summary.changes["added"] == 1, summary.changes
    from maguyva.query.engine import Engine

    found = Engine.open(tmp_path).search("under_ignored", modalities=["structural"]).results
    assert [r.path for r in found] == ["obj/sub/new.py"]
    # an ignored tree is neither recorded nor descended into (no watch, no stat)
    state, _ = scan(tmp_path, {}, None)
    assert "obj/sub" in state.dirs
    assert not any(d.startswith("node_modules") for d in state.dirs), sorted(state.dirs)


IGNORE_CASES = [
    (".gitignore", "build/\n*.egg-info\n/top_only\n!keep.egg-info\n"),
    ("src/.gitignore", "gen\n**/cache/**\nsub/deep\n"),
    (".maguyvaignore", "vendor\n!src/gen\n"),
    ("docs/.gitignore", "[ab]uild\n_*\n"),
]
DIRS = ["build", "src/build", "a.egg-info", "keep.egg-info", "top_only", "src/top_only",
        "src/gen", "src/x/gen", "src/cache", "src/cache/inner", "src/sub/deep", "src/sub/other",
        "vendor", "src/vendor", "docs/build", "docs/auild", "docs/cuild", "docs/_priv",
        "docs/ok", "x/y/z"]  # fmt: skip


def test_ignore_rules_for_directories_match_the_walker(tmp_path):
    from maguyva.repo.ignore import IgnoreRules

    for rel, text in IGNORE_CASES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    for d in DIRS:
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
        (tmp_path / d / "probe.txt").write_text("probe\n")
    files, _skipped = _core.walk_files(str(tmp_path), max_file_bytes=1 << 20, allow_large=[],
                                       follow_symlinks=False, max_trigrams=20_000)  # fmt: skip
    listed = {p for p, _s, _m in files}
    rules = IgnoreRules(tmp_path)

    def walker_ignores(d: str) -> bool:  # the first ignored directory on the way down
        parts = d.split("/")
        return any(
            f"{'/'.join(parts[: i + 1])}/probe.txt" not in listed
            for i in range(len(parts)) if (tmp_path / "/".join(parts[: i + 1]) / "probe.txt").exists()
        )  # fmt: skip

    for d in DIRS:
        parts = d.split("/")
        ours = any(rules.ignored_dir("/".join(parts[: i + 1])) for i in range(len(parts)))
        if d == "src/cache":  # entered by the walker, but `cache/**` ignores all it holds
            assert not ours
        else:
            assert ours == walker_ignores(d), d


def test_hinted_scan_stats_only_the_event_paths_and_racy_files(tmp_path):
    write_repo(tmp_path)
    old = time.time_ns() - 60 * 10**9
    for path in tmp_path.rglob("*"):
        os.utime(path, ns=(old, old))
    state, _ = scan(tmp_path, {}, None)
    (tmp_path / "pkg" / "core.py").write_text("def core_edited():\n    return 1\n")
    (tmp_path / "pkg" / "render.py").write_text("def render_edited():\n    return 2\n")
    hinted, changes = scan(tmp_path, {}, state, hints=["pkg/core.py"])
    assert changes.modified == ["pkg/core.py"] and not changes.walked  # render: no event
    full, changes = scan(tmp_path, {}, hinted)
    assert changes.modified == ["pkg/render.py"]  # the full pass makes up for a lost event
    # files modified within 2 s of a check are re-checked even without an event
    (tmp_path / "pkg" / "render.py").write_text("def render_again():\n    return 3\n")
    _, changes = scan(tmp_path, {}, full, hints=[])
    assert changes.modified == ["pkg/render.py"]
    # a new file changes its directory: walked; an ignore file named by an event: walked
    (tmp_path / "pkg" / "fresh.py").write_text("def fresh():\n    return 4\n")
    later, changes = scan(tmp_path, {}, full, hints=["pkg/fresh.py"])
    assert changes.added == ["pkg/fresh.py"] and changes.walked
    (tmp_path / "tools" / ".maguyvaignore").write_text("cli.py\n")
    os.utime(tmp_path / "tools", ns=(old, old))  # so only the ignore file tells
    _, changes = scan(tmp_path, {}, later, hints=["tools/.maguyvaignore"])
    assert changes.deleted == ["tools/cli.py"] and changes.walked


def test_file_created_while_the_tree_is_walked_is_found_by_the_next_check(tmp_path, monkeypatch):
    """A file created after the walker listed its directory but before the directory's mtime
    is recorded must not be lost: a directory modified within the racy window is recorded as
    unknown, so the next check walks again (as git re-checks racily clean files)."""
    from maguyva.repo import changes

    write_repo(tmp_path)
    walk = changes.walk_repository

    def walk_then_create(root, config):
        listed = walk(root, config)
        (tmp_path / "pkg" / "late.py").write_text("def created_during_the_walk():\n    pass\n")
        return listed

    monkeypatch.setattr(changes, "walk_repository", walk_then_create)
    state, _ = scan(tmp_path, {}, None)
    monkeypatch.setattr(changes, "walk_repository", walk)
    assert "pkg/late.py" not in state.files
    _, found = scan(tmp_path, {}, state)
    assert found.added == ["pkg/late.py"] and found.walked


def test_small_updates_write_a_delta_that_merges_folds_and_equals_from_scratch(
    tmp_path, monkeypatch
):
    """One-file updates write the file's rows as a delta (segments and files.json are hard
    links); past `DELTA_MAX_FILES` the deltas merge into one, past `DELTA_MAX_BYTES` they fold
    into the segments. After every step, a long-running writer, a fresh one reading the delta
    from disk, and a from-scratch build store the same rows and give the same answers."""
    from maguyva.build import indexer
    from maguyva.build import layout as files_layout

    monkeypatch.setattr(files_layout, "DELTA_MAX_FILES", 2)
    root = tmp_path / "repo"
    write_repo(root)
    writer = indexer.Indexer(root, config=CONFIG)
    writer.update()
    steps = [("edit", "pkg/core.py"), ("edit", "pkg/render.py"), ("edit", "tools/cli.py"),
             ("delete", "pkg/render.py"), ("add", "pkg/extra_1.py"), ("edit", "pkg/core.py"),
             ("fold", "tools/cli.py"), ("edit", "pkg/core.py")]  # fmt: skip
    modes = []
    for n, (op, rel) in enumerate(steps):
        target = root / rel
        if op == "delete":
            target.unlink()
        elif op == "add":
            target.write_text(f"from .core import load_items\n\n\ndef extra_{n}():\n"
                              f"    return load_items({n})\n")  # fmt: skip
        else:
            target.write_text(target.read_text() + f"\n\ndef step_{n}(x):\n    return x + {n}\n")
        if op == "fold":
            monkeypatch.setattr(files_layout, "DELTA_MAX_BYTES", 1)
        before = IndexDir(root / ".maguyva").current()  # pinned: kept while we compare
        summary = writer.update(hints=[rel]) if n % 2 else writer.update()
        monkeypatch.setattr(files_layout, "DELTA_MAX_BYTES", 8 << 20)
        assert not summary.noop
        gen = IndexDir(root / ".maguyva").current(pin=False)
        layout = gen.manifest["layout"]
        modes.append(layout["mode"])
        assert layout["delta_files"] <= 2, layout
        if layout["mode"] == "delta":  # the segments and files.json are links
            for name in ("files.json", "chunks/00.jsonl", "extract/63.json"):
                assert (gen.path / name).stat().st_ino == (before.path / name).stat().st_ino
        before.release()
        scratch = tmp_path / f"scratch-{n}"
        build_index(root, config={**CONFIG, "index_dir": str(scratch)})
        assert _snapshot(root / ".maguyva") == _snapshot(scratch), (op, rel, layout)
        assert answers(root) == answers(root, scratch), (op, rel)
        report = fsck(root / ".maguyva")
        assert report.ok, report.errors
        # a fresh writer reads the delta from disk and continues from it
        fresh = indexer.Indexer(root, config=CONFIG)
        assert fresh._reusable(gen).index == writer._reusable(gen).index
        assert fresh.update().noop
    assert modes.count("delta") >= 5 and "fold" in modes, modes
    assert modes[-1] == "delta", modes


def test_head_commit_is_read_as_git_reports_it(tmp_path):
    """The commit recorded with each generation, read from `.git/`, is `git rev-parse HEAD`
    for a loose ref, a packed ref, a detached HEAD and a subdirectory; None outside git."""
    from maguyva.repo.git import ask_git, git_commit

    assert git_commit(tmp_path) is None
    write_repo(tmp_path)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip

    def git(*argv: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *argv], check=True, env=env,
                       capture_output=True)  # fmt: skip

    git("init", "-q")
    assert git_commit(tmp_path) is None  # no commit yet: git says none either
    git("add", "-A")
    git("commit", "-qm", "one")
    loose = git_commit(tmp_path)
    assert loose is not None and loose == ask_git(tmp_path)
    assert git_commit(tmp_path / "pkg") == loose
    git("pack-refs", "--all")
    assert not any((tmp_path / ".git" / "refs" / "heads").iterdir())
    assert git_commit(tmp_path) == loose
    git("commit", "-q", "--allow-empty", "-m", "two")
    git("checkout", "-q", "--detach", loose)
    assert git_commit(tmp_path) == loose == ask_git(tmp_path)


def test_source_file_list_is_reused_and_equals_a_fresh_one(tmp_path):
    """A long-running writer rebuilds the list of source files from the previous one (hinted
    scans keep unchanged records): it equals `RepoState.source_files()` after each update."""
    from maguyva.build.indexer import Indexer

    write_repo(tmp_path)
    writer = Indexer(tmp_path, config=CONFIG)
    writer.update()
    for n, rel in enumerate(["pkg/core.py", "pkg/render.py", "pkg/core.py"]):
        target = tmp_path / rel
        target.write_text(target.read_text() + f"\n\ndef more_{n}():\n    return {n}\n")
        writer.update(hints=[rel])
        state = writer.last_state
        assert state is not None and writer._files_memo is not None
        assert writer._files_memo[1] == state.source_files()
