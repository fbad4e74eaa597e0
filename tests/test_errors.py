"""Every bad input of issue 20's U and K lists gets one clear line on stderr and exit 2 (ripgrep's
convention), through the real CLI in a subprocess or the real MCP client; JSON output is strict
JSON; file names that could forge or reorder output are escaped in human output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from interfaces_corpus import make_corpus
from mcp import ClientSession
from test_mcp import text_of, with_session

from maguyva.api import Index
from maguyva.interfaces.output import dumps_json

MAGUYVA = [sys.executable, "-m", "maguyva.interfaces.cli"]
DEEP = "/" + "(" * 1000 + "a" + ")" * 1000 + "/"


def run(root: Path, *args: str | bytes, env: dict[str, str] | None = None):
    return subprocess.run([*MAGUYVA, *args], cwd=root, capture_output=True, timeout=300,
                          env={**os.environ, "NO_COLOR": "1", **(env or {})})  # fmt: skip


def one_line_error(out: subprocess.CompletedProcess, *words: str) -> str:
    """Exit 2, nothing on stdout, one `maguyva: error:` line naming `words`, no traceback."""
    err = out.stderr.decode(errors="replace")
    assert out.returncode == 2, (out.returncode, err)
    assert out.stdout == b"", out.stdout
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("maguyva: error: "), err
    assert "internal error" not in err and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)
    return err


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = make_corpus(tmp_path_factory.mktemp("errors"))
    Index.open(root).build()
    return root


def test_deeply_nested_regex_is_a_clear_error(root):
    one_line_error(run(root, "search", DEEP), "nested too deeply")


def test_invalid_utf8_argument_is_a_clear_error(root):
    one_line_error(run(root, "search", b"caf\xff"), "not valid UTF-8", "\\xff")


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "-1"])
def test_non_finite_weights_are_refused(root, value):
    one_line_error(run(root, "search", "dedent", "--weights", f"text={value}"), "--weights")


def test_json_output_is_strict_json(root):
    out = run(root, "search", "dedent", "--json", "--weights", "text=1e308,structural=1e308")
    assert out.returncode == 0, out.stderr

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in JSON output")

    for line in out.stdout.decode().splitlines():
        json.loads(line, parse_constant=refuse)
    assert dumps_json({"a": [float("inf"), float("nan"), 1.5]}) == '{"a": [null, null, 1.5]}'


def test_unclosed_glob_is_a_clear_error(root):
    one_line_error(run(root, "search", "dedent", "-g", "[[["), "unclosed character class")


def test_unknown_type_is_a_clear_error(root):
    one_line_error(run(root, "search", "dedent", "-t", "nosuchlang"), "nosuchlang", "unknown type")
    assert run(root, "search", "dedent", "-t", "py").returncode == 0  # an alias still works


def test_modality_not_built_is_a_clear_error(root):
    err = one_line_error(run(root, "search", "dedent", "--modalities", "semantic"), "semantic")
    assert "not built" in err or "not selected" in err or "--modalities" in err


def test_unknown_kind_is_a_clear_error(root):
    one_line_error(run(root, "search", "dedent", "--kind", "garbage"), "garbage", "unknown kind")
    assert run(root, "search", "dedent", "--kind", "def").returncode == 0


def test_long_fixed_string_is_searched_or_refused_clearly(root):
    literal = "x" * 120_000
    out = run(root, "search", "-F", literal)
    err = out.stderr.decode()
    assert "bad regex" not in err and "internal error" not in err, err[:300]
    assert out.returncode in (1, 2), err[:300]
    if out.returncode == 2:
        one_line_error(out, "-F")


def test_empty_query_says_so(root):
    one_line_error(run(root, "search", ""), "empty query")
    one_line_error(run(root, "search", "   "), "empty query")


def test_mcp_errors_are_one_sentence_without_links(root):
    async def scenario(session: ClientSession):
        return [await session.call_tool("search", {"query": q}) for q in ("", DEEP)]

    empty, deep = with_session(root, scenario)
    for result in (empty, deep):
        assert result.is_error
        assert "pydantic" not in text_of(result) and "http" not in text_of(result)
    assert "at least 1 character" in text_of(empty) and "\n" not in text_of(empty)
    assert "nested too deeply" in text_of(deep)


def test_fsck_names_an_unreadable_file(root, tmp_path):
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(root, copy, symlinks=True)
    meta = next((copy / ".maguyva").glob("gen-*/meta.json"))
    meta.unlink()
    meta.mkdir()  # reading it fails with EISDIR (root ignores permission bits)
    out = run(copy, "fsck")
    err, text = out.stderr.decode(), out.stdout.decode()
    assert out.returncode == 1, (out.returncode, err, text)
    assert "meta.json: unreadable" in text, text
    assert "Errno" not in err + text and "internal error" not in err


def test_disk_full_on_a_first_build_says_nothing_was_written(tmp_path):
    repo = make_corpus(tmp_path)
    launcher = Path(__file__).parent / "support" / "faulty_run.py"
    out = subprocess.run([sys.executable, str(launcher), "enospc@20000", "cli", "index"],
                         cwd=repo, capture_output=True, timeout=300,
                         env={**os.environ, "NO_COLOR": "1"})  # fmt: skip
    err = out.stderr.decode()
    assert out.returncode == 2, err
    assert "previous generation still serves" not in err, err
    assert "no index was written" in err, err
    assert "Exception ignored" not in err and "Bad file descriptor" not in err, err


def test_file_names_that_forge_output_are_escaped(root, tmp_path):
    import shutil

    copy = tmp_path / "repo"
    shutil.copytree(root, copy, symlinks=True)
    shutil.rmtree(copy / ".maguyva")
    names = {
        "zqxj_marker_one": "evil\nfake.py:1-1 forged.py",
        "zqxj_marker_two": "\u202eyp.evil.py",
    }
    for marker, name in names.items():
        (copy / name).write_text(f"{marker} = 1\n")
    assert run(copy, "index", "-q").returncode == 0
    for query, shown in (("zqxj_marker_one", "evil\\nfake.py"), ("zqxj_marker_two", "\\u202e")):
        for flags in ((), ("-l",)):
            out = run(copy, "search", query, *flags)
            text = out.stdout.decode()
            assert out.returncode == 0, out.stderr
            assert shown in text and "\u202e" not in text, text
            assert not any(line.startswith("fake.py") for line in text.splitlines()), text
        out = run(copy, "search", query, "--json")  # JSON keeps the name as it is
        messages = [json.loads(line) for line in out.stdout.decode().splitlines()]
        paths = [m["data"]["path"]["text"] for m in messages if m["type"] == "begin"]
        assert paths == [names[query]], paths


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (a real full disk); skipped where mounting is not permitted."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True)  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        # Leave 64 KiB free: the index of this corpus is smaller than the tmpfs itself.
        free = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
        (mount / "filler").write_bytes(b"\0" * max(0, free - 64 * 1024))
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_real_full_disk_on_a_first_build(root, small_disk):
    out = run(root, "index", "--index-dir", str(small_disk / "idx"))
    err = out.stderr.decode()
    lines = [x for x in err.splitlines() if x.startswith("maguyva: error:")]
    assert out.returncode == 2 and len(lines) == 1, err
    assert "No space left on device" in lines[0] and "no index was written" in lines[0], err
    assert "Exception ignored" not in err and "Traceback" not in err, err
