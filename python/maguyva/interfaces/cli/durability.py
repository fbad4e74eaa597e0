"""The durability subcommands of the CLI: `maguyva watch`, `maguyva fsck` and
`maguyva index --repair`. `cli.py` registers them with `add_subcommands` and `commands`.

Exit codes: fsck 0 when the index is sound, 1 when it found problems (named, one per line),
2 when it could not run; repair 0 when the index is sound afterwards, 2 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_PROBLEMS, EXIT_ERROR = 0, 1, 2

Handler = Callable[[argparse.Namespace], int]


def add_subcommands(
    sub: Any, common: argparse.ArgumentParser, index: argparse.ArgumentParser
) -> None:
    """Add `watch` and `fsck`, and `--repair` to the `index` parser."""
    index.add_argument(
        "--repair", action="store_true",
        help="verify the index and fix it (fall back to a sound generation, or rebuild)",
    )  # fmt: skip
    watch = sub.add_parser("watch", parents=[common], help="keep the index current as files change")
    watch.add_argument("path", nargs="?", type=Path, help="repository (default: --root or .)")
    watch.add_argument("--debounce-ms", type=int, default=300, help="group bursts (default 300)")
    watch.add_argument("--reconcile-s", type=float, default=30.0,
                       help="check anyway after this much quiet (default 30)")  # fmt: skip
    watch.add_argument("--poll", action="store_true", help="no OS events: check periodically")
    watch.add_argument("--poll-s", type=float, default=2.0, help="polling period (default 2)")
    watch.add_argument("--json", action="store_true", help="one JSON line per update")
    fsck = sub.add_parser("fsck", parents=[common], help="verify every file of the index")
    fsck.add_argument("path", nargs="?", type=Path, help="repository (default: --root or .)")
    fsck.add_argument("--json", action="store_true", help="machine-readable report")
    fsck.add_argument("--repair", action="store_true", help="then fix it (as `index --repair`)")
    fsck.add_argument("--wait", action="store_true", help="with --repair: wait for a writer")


def _root(args: argparse.Namespace, fallback: Callable[[argparse.Namespace], Path]) -> Path:
    return Path(args.path).resolve() if getattr(args, "path", None) else fallback(args)


def _index_path(root: Path, args: argparse.Namespace) -> Path:
    from maguyva.config import load_config
    from maguyva.store.generations import default_index_dir

    if args.index_dir:
        return Path(args.index_dir)
    configured = load_config(root).get("index_dir")
    return Path(configured) if configured else default_index_dir(root)


def cmd_fsck(args: argparse.Namespace, root_of: Callable[[argparse.Namespace], Path]) -> int:
    from maguyva.build.fsck import fsck

    root = _root(args, root_of)
    report = fsck(_index_path(root, args))
    if args.json:
        print(json.dumps(report.to_dict()))
    elif not getattr(args, "quiet", False):
        for line in report.errors:
            print(f"error: {line}")
        for line in report.warnings:
            print(f"warning: {line}")
        state = "sound" if report.ok else f"{len(report.errors)} problem(s)"
        by = ", ".join(f"{name} ({how})" for name, how in sorted(report.verified_by.items()))
        print(f"{report.index_dir}: generation {report.generation}, "
              f"{report.checked_files} files checked{f'; modalities: {by}' if by else ''}: "
              f"{state}")  # fmt: skip
    return EXIT_OK if report.ok else EXIT_PROBLEMS


def cmd_repair(args: argparse.Namespace, root: Path) -> int:
    from maguyva.build.fsck import repair

    overrides: dict[str, Any] = {"index_dir": str(args.index_dir)} if args.index_dir else {}
    if getattr(args, "modalities", None):
        overrides["modalities"] = [m.strip() for m in args.modalities.split(",") if m.strip()]
    outcome = repair(root, config=overrides, wait_for_lock=args.wait)
    if getattr(args, "json", False):
        print(json.dumps(outcome))
    elif not getattr(args, "quiet", False):
        for problem in outcome["before"]["errors"]:
            print(f"found: {problem}")
        for action in outcome["actions"] or ["nothing to repair"]:
            print(action)
        print("index is sound" if outcome["after"]["ok"] else "index is still damaged")
    return EXIT_OK if outcome["after"]["ok"] else EXIT_ERROR


def cmd_watch(args: argparse.Namespace, root_of: Callable[[argparse.Namespace], Path]) -> int:
    from maguyva.build.watch import watch

    root = _root(args, root_of)
    overrides = {"index_dir": str(args.index_dir)} if args.index_dir else None
    quiet = getattr(args, "quiet", False)

    def report(summary: Any) -> None:
        if quiet:
            return
        if args.json:
            print(json.dumps({"generation": summary.generation, "changes": summary.changes,
                              "timings_s": summary.timings_s}), flush=True)  # fmt: skip
            return
        c, took = summary.changes, summary.timings_s
        line = (f"generation {summary.generation}: +{c.get('added', 0)} ~{c.get('modified', 0)} "
                f"-{c.get('deleted', 0)} >{c.get('renamed', 0)} in "
                f"{took.get('total', 0.0) * 1000:.0f} ms")  # fmt: skip
        if "searchable" in took:  # `maguyva.build.follow`: searchable first, the graph after
            line += f" (searchable after {took['searchable'] * 1000:.0f} ms, then the graph)"
        print(line, flush=True)

    if not quiet:
        print(f"maguyva: watching {root} (Ctrl-C to stop)", file=sys.stderr)
    stats = watch(root, config=overrides, on_update=report, debounce_ms=args.debounce_ms,
                  reconcile_s=args.reconcile_s, poll_s=args.poll_s,
                  force_polling=args.poll)  # fmt: skip
    if not quiet:
        print(f"maguyva: stopped after {stats.updates} update(s)", file=sys.stderr)
    return EXIT_OK


def commands(
    cmd_index: Handler, root_of: Callable[[argparse.Namespace], Path]
) -> dict[str, Handler]:
    """Handlers to merge into the CLI's table; `index` gains `--repair`."""

    def index(args: argparse.Namespace) -> int:
        if getattr(args, "repair", False):
            root = Path(args.path).resolve() if args.path is not None else root_of(args)
            return cmd_repair(args, root)
        return cmd_index(args)

    return {
        "index": index,
        "watch": lambda args: cmd_watch(args, root_of),
        "fsck": lambda args: (
            cmd_repair(args, _root(args, root_of)) if args.repair else cmd_fsck(args, root_of)
        ),
    }
