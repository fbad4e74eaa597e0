"""Snapshot tests: `maguyva --help` and every subcommand's `--help`, byte for byte.

The parser is assembled from one small function per subcommand group; these snapshots hold
what a user reads while that code moves. Regenerate after an intended change with
`MAGUYVA_UPDATE_SNAPSHOTS=1 pytest tests/test_cli_help.py` and review the diff; never
hand-edit the snapshots.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest

from maguyva.interfaces.cli.main import build_parser, main

SNAPSHOTS = Path(__file__).parent / "snapshots" / "cli"
UPDATE = os.environ.get("MAGUYVA_UPDATE_SNAPSHOTS") == "1"
WIDTH = "100"  # argparse wraps to the terminal: the snapshots are taken at a fixed width
SNAPSHOT_PYTHON = (3, 11)
"""The Python whose argparse wrote the snapshots: 3.13 formats help differently (a metavar
once per option), so other versions compare nothing."""


def _subcommands() -> list[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(actions[0].choices)


COMMANDS = _subcommands()


def test_every_subcommand_is_snapshotted() -> None:
    """A snapshot left behind by a removed subcommand, or one missing, is noticed."""
    have = {p.name for p in SNAPSHOTS.glob("help*.txt")}
    want = {"help.txt", *(f"help-{c}.txt" for c in COMMANDS)}
    assert have == want


@pytest.mark.skipif(sys.version_info[:2] != SNAPSHOT_PYTHON, reason="argparse formats differ")
@pytest.mark.parametrize("command", ["", *COMMANDS], ids=["maguyva", *COMMANDS])
def test_help_is_unchanged(
    command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", WIDTH)
    assert main([*([command] if command else []), "--help"]) == 0
    got = capsys.readouterr().out
    assert got.startswith("usage: maguyva")
    snap = SNAPSHOTS / (f"help-{command}.txt" if command else "help.txt")
    if UPDATE or not snap.exists():
        SNAPSHOTS.mkdir(parents=True, exist_ok=True)
        snap.write_text(got, "utf-8")
        if not UPDATE:
            pytest.fail(f"snapshot {snap.name} was missing and has been written; review it")
    assert got == snap.read_text("utf-8")
