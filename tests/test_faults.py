"""Fault injection is test code: the package ships no fault layer and no environment variable
turns one on; the tests' own launcher (`tests/support/faulty_run.py`) installs it in a child,
for the library or for the `maguyva` CLI."""

from __future__ import annotations

import signal
from pathlib import Path

from durability_support import CONFIG, index_in_child, write_repo
from support import faults

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "maguyva"


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    write_repo(root, 0)
    (root / ".maguyva.toml").write_text(
        "modalities = [" + ", ".join(f'"{m}"' for m in CONFIG["modalities"]) + "]\n"
    )
    return root


def test_the_package_ships_no_test_code():
    assert not (PACKAGE / "faults.py").exists()
    assert not (PACKAGE / "scale" / "synthetic.py").exists()
    sources = [p for p in PACKAGE.rglob("*.py") if "MAGUYVA_FAULTS" in p.read_text("utf-8")]
    assert sources == []


def test_an_environment_variable_cannot_kill_a_build(tmp_path: Path) -> None:
    """The variable the old fault layer read: a production build ignores it and completes."""
    root = _repo(tmp_path)
    child = index_in_child(root, env={"MAGUYVA_FAULTS": "kill@1"})
    _out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err.decode()[-2000:]
    assert (root / ".maguyva").is_dir()


def test_the_launcher_installs_faults_for_library_code(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    child = index_in_child(root, faults="kill@1")
    _out, err = child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL, err.decode()[-2000:]


def test_the_launcher_runs_the_cli_with_faults(tmp_path: Path) -> None:
    """A failed rename during `maguyva index` is the CLI's one-line error, not a traceback; a
    recording layer lets the same command complete."""
    root = _repo(tmp_path)
    code, _out, err = faults.run("fail:rename@1", "index", str(root))
    assert code == 2, err
    assert "maguyva: error:" in err and "injected I/O error" in err, err
    assert "Traceback" not in err
    code, _out, err = faults.run("record", "index", str(root))
    assert code == 0, err


def test_a_bad_spec_is_refused():
    code, _out, err = faults.run("explode@3", "--version")
    assert code != 0 and "bad fault spec 'explode@3'" in err
