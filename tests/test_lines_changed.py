"""All lines of a literal when files changed after indexing (issue 21): the native printer's
forward walk (`rust/src/lines.rs`) prints, byte for byte, what the Python printer prints
(`Renderer.text` with `native=False`) for a file grown at its top, one shrunk below its
recorded lines, one rewritten at the same size, one deleted and one whose lines are not
UTF-8; the warm server prints what the process prints; and a result's lines, gathered from
its file's shared `file_lines` without a set, are those the set of every hit's lines gives."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest
from interfaces_corpus import make_corpus

from maguyva.api import Index
from maguyva.interfaces import client, output
from maguyva.interfaces.cli.main import main
from maguyva.query import present
from maguyva.repo import changes

_INIT = output.Renderer.__init__
BODY = "".join(f"def f{i}(self):\n    return self.v{i}\n" for i in range(8))


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = make_corpus(tmp_path_factory.mktemp("changed"))
    for name in ("grown.py", "shrunk.py", "gone.py", "same_size.py", "touched.py"):
        (root / name).write_text(BODY)
    (root / "bytes.py").write_bytes(
        b"def g(self):\r\n    s = b'\xff self \xfe'\r\n    t = '\xe9self'\n    return self\r"
    )
    assert main(["-q", "index", str(root), "--modalities", "text,structural"]) == 0
    (root / "grown.py").write_text("# a\n# b\n# c self\n" + BODY + "x = 1\n")
    (root / "shrunk.py").write_text("def f0(self):\n    return 0\n")  # recorded lines past its end
    (root / "gone.py").unlink()
    (root / "same_size.py").write_text(BODY.replace("self", "SELF"))  # stat differs, size equal
    at = (root / "touched.py").stat().st_mtime_ns + 10**9
    os.utime(root / "touched.py", ns=(at, at))  # a `touch`: a new mtime, the same content
    return root


def _printed(root: Path, args: list[str], native: bool, monkeypatch, capsysbinary) -> bytes:
    monkeypatch.chdir(root)
    monkeypatch.setenv("MAGUYVA_DAEMON", "0")

    def patched(self, *a, **k):
        _INIT(self, *a, **{**k, "native": native, "batched": native})

    monkeypatch.setattr(output.Renderer, "__init__", patched)
    code = main(["search", *args])
    assert code in (0, 1)
    return capsysbinary.readouterr().out


QUESTIONS = [
    ['"self"', "--max-results", "1000"],
    ['"self"', "--max-results", "1000", "-C", "2"],
    ['"self"', "--max-results", "1000", "-m", "3", "-C", "1"],
    ['"self"', "--max-results", "1000", "--color", "always", "-i"],
    ['"self"', "--max-results", "1000", "-w"],
    ["-F", "return self", "--max-results", "100"],
]


@pytest.mark.parametrize("args", QUESTIONS, ids=lambda a: " ".join(a))
def test_changed_files_print_as_the_python_printer(root, args, monkeypatch, capsysbinary):
    reference = _printed(root, args, False, monkeypatch, capsysbinary)
    native = _printed(root, args, True, monkeypatch, capsysbinary)
    assert native == reference
    for name in (b"grown.py", b"shrunk.py", b"gone.py", b"same_size.py", b"bytes.py"):
        assert name in reference  # each file is answered (a deleted one by its heading)
    assert b"[stale]" in reference


def test_stale_flags_of_an_answer_are_each_files_own(root):
    """`Engine.stale_of` (every file of an answer stat'ed in one native call) says what
    `changes.is_stale` says file by file: grown, shrunk, rewritten at the same size (the digests
    differ) and deleted files are stale; a touched one (new mtime, same digest), an unchanged
    one and a path never indexed are not."""
    index = Index.open(root)
    states = index.indexed_files()
    paths = [*states, "never-indexed.py", "sub/../grown.py"]
    flags = index.engine().stale_of(paths)
    assert flags == {path: changes.is_stale(str(root), path, states.get(path)) for path in paths}
    assert all(flags[p] for p in ("grown.py", "shrunk.py", "gone.py", "same_size.py"))
    assert not flags["touched.py"] and not flags["never-indexed.py"]
    assert not all(flags.values())


def test_changed_files_show_their_lines_as_they_are_now(root, monkeypatch, capsysbinary):
    out = _printed(root, ['"self"', "--max-results", "1000"], True, monkeypatch, capsysbinary)
    blocks = {block.split(b"\n", 1)[0].split(b":", 1)[0]: block
              for block in out.rstrip(b"\n").split(b"\n\n")}  # fmt: skip
    assert blocks[b"gone.py"].count(b"\n") == 0  # its heading alone
    assert b"[stale]" in blocks[b"gone.py"].split(b"\n")[0]
    # two lines are left of the sixteen recorded: they are printed, nothing past them
    assert blocks[b"shrunk.py"].split(b"\n")[1:] == [b"1:def f0(self):", b"2:    return 0"]
    grown = (root / "grown.py").read_text().split("\n")
    for line in blocks[b"grown.py"].split(b"\n")[1:]:
        number, _, text = line.decode().partition(":")
        assert grown[int(number) - 1] == text  # the recorded numbers, the current text
    assert "\ufffd self \ufffd".encode() in blocks[b"bytes.py"]
    assert b"\r" not in blocks[b"bytes.py"]


class _SetLines:
    """`present`'s lines as a set of every hit's lines and `file_lines` (the rule before)."""

    def __init__(self) -> None:
        self.lines: set[int] = set()

    def add(self, lines: list[int], file_lines: list[int] | None) -> None:
        self.lines.update(lines)
        self.lines.update(file_lines or ())

    def sorted(self) -> list[int]:
        return sorted(self.lines)


@pytest.mark.parametrize("question, options", [
    ('"self"', {}), ('"self"', {"whole_word": True}), ("self.", {"fixed_strings": True}),
    ("se+lf", {"regex": True}), ("who calls dedent", {}), ("how are shell words split", {}),
    ('"self" def', {}),
])  # fmt: skip
def test_lines_from_file_lines_are_the_union_of_every_hits(root, question, options, monkeypatch):
    gathered = Index.open(root).search(question, limit=1000, **options)
    monkeypatch.setattr(present, "_FileLines", _SetLines)
    expected = Index.open(root).search(question, limit=1000, **options)
    assert [r.to_dict() for r in gathered.results] == [r.to_dict() for r in expected.results]
    if question != "how are shell words split":
        assert sum(len(r.lines) for r in gathered.results) > 0


def test_the_warm_server_prints_changed_files_as_the_process(root, monkeypatch):
    monkeypatch.chdir(root)
    monkeypatch.delenv("MAGUYVA_DAEMON", raising=False)
    monkeypatch.setenv("MAGUYVA_DAEMON_IDLE", "300")
    monkeypatch.setenv("MAGUYVA_DAEMON_TRACE", "1")
    index_dir = root / ".maguyva"
    try:
        for args in QUESTIONS[:3]:
            expected, _ = _capture(main, ["search", *args, "--no-daemon"])
            answer, said = _capture(client.answer, ["search", *args])
            assert answer == expected
            assert "question sent to pid" in said and "answering in process" not in said, said
    finally:
        client.stop(index_dir)


def _capture(run, argv: list[str]) -> tuple[tuple[int | None, bytes], str]:
    """`run(argv)`'s exit code and stdout bytes, and what it wrote to stderr."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="\n")
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(argv)
        out.flush()
    return (code, out.buffer.getvalue()), err.getvalue()  # type: ignore[attr-defined]
