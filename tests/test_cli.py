"""The ripgrep-like CLI on a real indexed repository: exit codes, JSON Lines, -l/-C/-g/-t/-w,
colour rules, query syntax, config --show, and the path-escape matrix."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from interfaces_corpus import escape_matrix, make_corpus

from maguyva.interfaces.cli.main import COMMANDS, build_parser, find_root, format_response, main

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = make_corpus(tmp_path_factory.mktemp("cli"))
    assert main(["-q", "index", str(root)]) == 0
    return root


@pytest.fixture
def run(root: Path, capsys, monkeypatch):
    monkeypatch.chdir(root)
    monkeypatch.delenv("NO_COLOR", raising=False)

    def invoke(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def test_exit_codes(run):
    assert run("search", "where is dedent defined")[0] == 0
    code, out, _ = run("search", '"zzzqqq_nowhere"')
    assert code == 1 and out == ""
    code, _, err = run("search", "x", "--preset", "turbo")
    assert code == 2 and "invalid choice" in err
    code, _, err = run("search", "/(/")
    assert code == 2 and err.startswith("maguyva: error: invalid regular expression")
    code, _, err = run("search", "x", "--weights", "text")
    assert code == 2 and "name=number" in err
    assert run("-q", "search", "where is dedent defined") == (0, "", "")
    assert run("search", "where is dedent defined", "-q") == (0, "", "")


def test_missing_index_is_exit_2(tmp_path: Path, capsys):
    assert main(["search", "anything", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no index" in err and "Traceback" not in err


def test_json_lines_parse_as_ripgrep(run, root: Path):
    code, out, _ = run("search", '"No closing quotation"', "--json", "-C", "1")
    assert code == 0
    messages = [json.loads(line) for line in out.splitlines()]
    assert all(set(m) == {"type", "data"} for m in messages)
    types = [m["type"] for m in messages]
    assert types[0] == "begin" and types[-1] == "summary"
    assert types.count("begin") == types.count("end")
    match = next(m["data"] for m in messages if m["type"] == "match")
    assert match["path"] == {"text": "shlex.py"}
    data = (root / "shlex.py").read_bytes()
    line = match["lines"]["text"].encode()
    assert data[match["absolute_offset"] :].startswith(line)  # offset is the line's byte offset
    assert data.count(b"\n", 0, match["absolute_offset"]) + 1 == match["line_number"]
    sub = match["submatches"][0]
    assert (
        line[sub["start"] : sub["end"]].decode() == sub["match"]["text"] == "No closing quotation"
    )
    assert any(m["type"] == "context" for m in messages)  # -C 1
    summary = messages[-1]["data"]
    assert summary["maguyva"]["intent"] == "exact_match"
    assert summary["stats"]["matched_lines"] >= 1 and "elapsed_total" in summary
    begin = messages[0]["data"]["maguyva"]
    assert begin["rank"] == 1 and begin["provenance"][0]["modality"] == "text"


def test_human_output_and_context(run):
    code, out, _ = run("search", '"No closing quotation"', "-C", "2", "--color", "never")
    assert code == 0
    first = out.splitlines()
    assert first[0].startswith("shlex.py:")
    numbered = [ln for ln in first[1:] if re.match(r"^\d+[:-]", ln)]
    assert any(ln.split(":", 1)[1].strip().startswith("raise ValueError") for ln in numbered
               if re.match(r"^\d+:", ln))  # fmt: skip
    assert sum(1 for ln in numbered if re.match(r"^\d+-", ln)) >= 2
    _, out, _ = run("search", "where is dedent defined", "--explain")
    assert "intent: find_definition" in out and "structural#1=" in out


def test_files_with_matches_and_filters(run):
    code, out, _ = run("search", "dedent", "-l", "-m", "20")
    paths = out.splitlines()
    assert code == 0 and len(paths) == len(set(paths)) and "pkg/__init__.py" in paths
    code, out, _ = run("search", "dedent", "-l", "-m", "20", "-g", "!pkg/*")
    assert "pkg/__init__.py" not in out.splitlines() and out
    code, out, _ = run("search", "dedent", "-l", "pkg")
    assert out.splitlines() == ["pkg/__init__.py"]
    assert run("search", "dedent", "-t", "rust")[0] == 1
    code, out, _ = run("search", "dedent", "-l", "-T", "py")
    assert code == 1 and out == ""
    code, out, _ = run("search", "dedent lang:python file:textwrap", "-l")
    assert out.splitlines() == ["textwrap.py"]


def test_case_and_word_flags(run):
    assert run("search", "No closing quotation", "-F", "-l")[1].splitlines()[0] == "shlex.py"
    assert run("search", "no closing quotation", "-F", "-s")[0] == 1
    assert run("search", "no closing quotation", "-F", "-i", "-l")[1].startswith("shlex.py")
    code, out, _ = run("search", "shlex", "-w", "--modalities", "text", "-l")
    assert code == 0 and out


def test_color_rules(run, monkeypatch):
    _, out, _ = run("search", '"No closing quotation"', "--color", "always")
    assert ANSI.search(out)
    _, out, _ = run("search", '"No closing quotation"', "--color", "auto")
    assert not ANSI.search(out)  # stdout is not a terminal here
    monkeypatch.setenv("NO_COLOR", "1")
    from maguyva.interfaces.output import use_color

    class Tty:
        def isatty(self) -> bool:
            return True

    assert use_color("auto", Tty()) is False and use_color("always", Tty()) is True
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert use_color("auto", Tty()) is False
    monkeypatch.setenv("TERM", "xterm")
    assert use_color("auto", Tty()) is True
    _, out, _ = run("search", '"No closing quotation"', "--json", "--color", "always")
    assert not ANSI.search(out)


def test_path_escape_matrix_cli(run, root: Path):
    for path in escape_matrix(root):
        code, out, err = run("search", "dedent", path)
        assert code == 2 and out == "", path
        assert err == f"maguyva: error: {path!r}: path is outside the repository root\n"


def test_status_and_config(run, root: Path, monkeypatch):
    code, out, _ = run("status", "--json")
    status = json.loads(out)
    assert code == 0 and status["files"] == 9 and status["stale_files"] == 0
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-top-secret")
    monkeypatch.setenv("MAGUYVA_LIMIT", "7")
    code, out, _ = run("config", "--show")
    assert code == 0 and "pa-top-secret" not in out
    assert re.search(r"^limit\s+= 7  # env \(MAGUYVA_LIMIT\)$", out, re.M)
    assert re.search(r"^modalities\s+= \[.*\]  # project", out, re.M)
    assert "VOYAGE_API_KEY" in out and "set (redacted)" in out
    settings = {r["key"]: r for r in json.loads(run("config", "--json")[1])["settings"]}
    assert settings["limit"]["value"] == 7


def test_root_discovery_from_a_subdirectory(root: Path, capsys, monkeypatch):
    monkeypatch.chdir(root / "pkg")
    assert find_root(Path.cwd()) == root
    assert main(["search", "where is dedent defined", "-l"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "textwrap.py"


def test_parser_is_a_command_table():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(COMMANDS) <= set(sub.choices)
    assert callable(format_response)


def test_real_entry_point_json_and_broken_pipe(root: Path):
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "maguyva.interfaces.cli.main", "search", "dedent", "--json"],
        cwd=root, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(x)["type"] for x in proc.stdout.splitlines()][-1] == "summary"
    piped = subprocess.run(
        f"{sys.executable} -m maguyva.interfaces.cli.main search dedent -C 5 -m 50 | head -n 1",
        shell=True, cwd=root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "Traceback" not in piped.stderr and "Broken pipe" not in piped.stderr


# ---- `maguyva index --dry-run` and `--memory` --------------------------------------------

OVERRUN = """
import sys
from maguyva.build import memory
memory.DRIVER_BYTES = memory.WORKER_BYTES = 1 << 20  # let the plan accept a tiny budget
from maguyva.interfaces.cli.main import main
sys.exit(main(["index", sys.argv[1], "--index-dir", sys.argv[2], "--memory", "8M",
               "--modalities", "text,structural,graph"]))
"""


def test_index_dry_run_and_memory_budget(tmp_path: Path, capsys):
    """`--dry-run` reports files, bytes, chunks, cost, largest directories and skipped files
    and writes nothing; the chunks it counts are those `--memory` then builds; an overrun of
    the budget ends with one clear error line and no generation; a bad size is exit 2."""
    repo = make_corpus(tmp_path / "repo")
    (repo / "blob.bin").write_bytes(b"\0\1\2" * 100)
    index_dir = tmp_path / "idx"
    assert main(["index", str(repo), "--dry-run", "--json", "--index-dir", str(index_dir)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["files"] > 5 and report["bytes"] > 0 and report["exact"]
    assert report["skipped"].get("binary", 0) >= 1 and report["largest_dirs"]
    assert report["embedding"]["remote"]["usd_full"] >= 0
    assert not index_dir.exists()
    assert main(["index", str(repo), "--dry-run", "--index-dir", str(index_dir)]) == 0
    human = capsys.readouterr().out
    assert "largest directories" in human and "skipped:" in human and "voyage" in human
    assert not index_dir.exists()

    assert main(["index", str(repo), "--memory", "2G", "--json", "--index-dir", str(index_dir),
                 "--modalities", "text,structural,graph"]) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"] == report["files"] and summary["chunks"] == report["chunks"]
    assert main(["index", str(repo), "--memory", "2G", "--index-dir", str(index_dir),
                 "--rebuild", "--modalities", "text"]) == 0  # fmt: skip
    out, err = capsys.readouterr()
    assert "memory budget 2048 MiB" in out and "extract:" in err and "commit:" in err

    assert main(["index", str(repo), "--memory", "lots", "--index-dir", str(index_dir)]) == 2
    assert "not a memory size" in capsys.readouterr().err
    assert main(["index", str(repo), "--memory", "100M", "--index-dir", str(index_dir)]) == 2
    assert "too small" in capsys.readouterr().err

    over = tmp_path / "over"
    run = subprocess.run([sys.executable, "-c", OVERRUN, str(repo), str(over)],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    # 8 MiB: below what the interpreter alone holds, however many pages it shares (PSS)
    assert "maguyva: error: memory budget of 8 MiB exceeded" in run.stderr
    assert "Traceback" not in run.stderr
    assert not list(over.glob("gen-*"))


def test_progress_lines_show_rate_and_eta():
    """Each phase's line gives its rate and ETA while it runs and its duration at the end."""
    import io

    from maguyva.build.progress import PhaseClock, PlainProgress

    now = [0.0]
    clock = PhaseClock(lambda: now[0])
    clock.update("extract", 0)
    now[0] = 10.0
    assert clock.describe("extract", 100, 400) == "100/400 (10/s, ETA 30.0s)"
    now[0] = 40.0
    assert clock.describe("extract", 400, 400) == "400 in 40.0s (10/s)"
    now[0] = 130.0
    assert clock.describe("extract", 650, 1300) == "650/1,300 (5/s, ETA 2m10s)"
    stream = io.StringIO()
    plain = PlainProgress(stream)
    plain("write", 0, 64)
    plain("write", 1, 64)  # throttled
    plain("write", 64, 64)
    plain("write", 64, 64)  # a phase ends once
    lines = stream.getvalue().splitlines()
    assert lines[0] == "maguyva: write: 0/64" and len(lines) == 2
    assert lines[1].startswith("maguyva: write: 64 in ")
