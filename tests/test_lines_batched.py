"""Every result of a text answer printed in one Rust call (`_core.print_results`) is byte for
byte what the Python printer prints (`Renderer.text` with `native=False`) and what one Rust
call per result printed before it (`batched=False`), on real standard-library modules with
the files a repository really has: bad UTF-8, CRLF line ends, a 300,000-character line, a
file deleted since indexing, one turned into a FIFO and one swapped for a link out of the root
(whose outside content is never printed). Each printed line is also checked against the file
itself: its number, its text and the order of the lines. And the records a chunk store keeps for
shown chunks (`SegmentedChunkStore.record` without text) answer as a fresh engine does."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from interfaces_corpus import make_corpus

from maguyva.api import Index
from maguyva.interfaces import output
from maguyva.interfaces.cli.main import main
from maguyva.modalities.text import literal, modality

_TIMINGS = re.compile(rb"^timings: .*$", re.M)
_INIT = output.Renderer.__init__
LONG = "x = [" + "self, " * 50_000 + "]\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = make_corpus(tmp_path_factory.mktemp("batched"))
    (root / "crlf.py").write_bytes(b"class A:\r\n    def f(self):\r\n        return self\r\n")
    (root / "latin1.py").write_bytes(b"# caf\xe9\ndef g(self):\n    s = '\xff self \xfe'\n")
    (root / "long.py").write_text(LONG + "def h(self):\n    pass\n")
    (root / "accent.py").write_text(
        "class Caf\u00e9:\n    def r\u00e9sum\u00e9(self):\n        pass\n"
    )
    for name in ("gone.py", "fifo.py", "swapped.py"):
        (root / name).write_text("def k(self):\n    return self.k\n")
    assert main(["-q", "index", str(root), "--modalities", "text,structural"]) == 0
    (root / "gone.py").unlink()
    (root / "fifo.py").unlink()
    os.mkfifo(root / "fifo.py")
    (root / "swapped.py").unlink()
    (root.parent / "outside" / "swapped.py").write_text("OUTSIDE_SECRET self\n")
    os.symlink(root.parent / "outside" / "swapped.py", root / "swapped.py")
    return root


def _printed(root: Path, args: list[str], mode: str, monkeypatch, capsysbinary) -> bytes:
    monkeypatch.chdir(root)
    monkeypatch.setenv("MAGUYVA_DAEMON", "0")
    native, batched = {"python": (False, False), "per-result": (True, False),
                       "batched": (True, True)}[mode]  # fmt: skip

    def patched(self, *a, **k):
        _INIT(self, *a, **{**k, "native": native, "batched": batched})

    monkeypatch.setattr(output.Renderer, "__init__", patched)
    code = main(["search", *args])
    out = capsysbinary.readouterr().out
    assert code in (0, 1)
    return _TIMINGS.sub(b"", out)  # --explain's timings differ between two runs


QUESTIONS = [
    ['"self"', "--max-results", "1000"],
    ['"self"', "--max-results", "1000", "-C", "2"],
    ['"SELF"', "--max-results", "50", "-i", "--color", "always"],
    ['"self"', "--max-results", "50", "-w", "-m", "2", "--explain"],
    ["-F", "self.", "--max-results", "100", "-s"],
    ["who calls dedent", "-C", "1"],
]


@pytest.mark.parametrize("args", QUESTIONS, ids=lambda a: " ".join(a))
def test_batched_prints_what_the_python_printer_prints(root, args, monkeypatch, capsysbinary):
    reference = _printed(root, args, "python", monkeypatch, capsysbinary)
    assert reference.count(b"\n") > 5
    assert _printed(root, args, "per-result", monkeypatch, capsysbinary) == reference
    assert _printed(root, args, "batched", monkeypatch, capsysbinary) == reference
    assert b"OUTSIDE_SECRET" not in reference and b"swapped.py" not in reference


_HEADING = re.compile(rb"^(\S+):(\d+)-(\d+)")


def test_each_line_is_the_files_line_in_order(root, monkeypatch, capsysbinary):
    out = _printed(root, ['"self"', "--max-results", "1000"], "batched", monkeypatch,
                   capsysbinary)  # fmt: skip
    files: dict[str, list[int]] = {}
    current = None
    for line in out.split(b"\n"):
        head = _HEADING.match(line)
        if head and not line[: head.end(1)].isdigit():
            current = head.group(1).decode()
            assert current not in files  # each file once
            files[current] = []
            continue
        number, sep, text = line.partition(b":")
        if not sep or not number.isdigit():
            continue
        assert current is not None
        on_disk = (root / current).read_bytes().split(b"\n")[int(number) - 1]
        assert text == on_disk.decode("utf-8", "replace").rstrip("\r").encode()
        assert b"self" in text
        files[current].append(int(number))
    for numbers in files.values():
        assert numbers == sorted(set(numbers))
    assert {"crlf.py", "latin1.py", "long.py", "shlex.py"} <= files.keys()
    assert files["gone.py"] == [] and files["fifo.py"] == []  # headings alone: unreadable now
    assert "swapped.py" not in files
    assert len(files["crlf.py"]) == 2 and files["long.py"][0] == 1


def test_kept_heads_answer_as_a_fresh_engine(root):
    questions = ['"self"', "self.", "where is dedent defined", "how are shell words split"]
    warm = Index.open(root)
    for question in questions * 2:
        fresh = Index.open(root)
        expected = [r.to_dict() for r in fresh.search(question, limit=200).results]
        assert [r.to_dict() for r in warm.search(question, limit=200).results] == expected
    assert warm.engine().chunks._records  # the second rounds read no chunk record


DIRECT = [
    ('"self"', {}), ('"self"', {"whole_word": True}), ("self.", {"fixed_strings": True}),
    ('"SELF"', {"case": "insensitive"}), ("se+lf", {"regex": True}), ('"sum"', {}),
    ("who calls dedent", {}),
]  # fmt: skip


@pytest.mark.parametrize("question, options", DIRECT)
def test_first_hits_alone_answer_as_every_hit(root, question, options, monkeypatch):
    """A direct literal answer from `literal_ranked` (each file's first hit in full, standing
    for the file's later groups too) equals the one from every hit in full, ranks and scores
    included; a definition line that is
    not ASCII (`def résumé(self)` for `"self"` and `"sum"`) is decided by Python's `re`."""
    ranked, decided = [], []
    real, real_decider = literal._ranked_hits, literal._decider
    monkeypatch.setattr(literal, "_ranked_hits", lambda *a: ranked.append(real(*a)) or ranked[-1])
    monkeypatch.setattr(literal, "_decider", lambda d: lambda texts: decided.append(texts) or
                        real_decider(d)(texts))  # fmt: skip
    lean = Index.open(root).search(question, limit=1000, **options)
    full_hits = modality.literal_hits
    monkeypatch.setattr(modality, "literal_hits", lambda index, query, k, demoted: full_hits(
        index, replace(query, first_per_file=False), k, demoted))  # fmt: skip
    full = Index.open(root).search(question, limit=1000, **options)
    assert [r.to_dict() for r in lean.results] == [r.to_dict() for r in full.results]
    assert len(lean.results) >= (1 if question != "who calls dedent" else 0)
    assert bool(ranked) == (question != "who calls dedent")
    for hits in ranked:  # one `Hit` per file, standing for each of the file's groups
        assert len({id(h) for h in hits}) == len({h.path for h in hits}) <= len(hits)
    if question == '"self"' and not options:
        assert len(ranked[0]) > len({h.path for h in ranked[0]})  # some file has two groups
    if question in ('"self"', '"sum"'):
        assert any("résumé" in text for texts in decided for text in texts)
