"""`python -m maguyva.scale`: the large-repository commands. `maguyva index --dry-run` and
`maguyva index --memory SIZE` cover the single-machine cases; these add the dry run's sample
size and price, and the partitioned (Ray) build.

    python -m maguyva.scale dry-run PATH [--json] [--sample N] [--price USD_PER_MTOK]
    python -m maguyva.scale build PATH [--ray [ADDRESS]] [--partitions N] [--embed]
                                       [--memory 6G] [--modalities text,structural,graph]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from maguyva.errors import MaguyvaError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m maguyva.scale", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    dry = sub.add_parser("dry-run", help="estimate files, chunks, tokens and cost; write nothing")
    dry.add_argument("path", type=Path, nargs="?", default=Path("."))
    dry.add_argument("--index-dir", type=Path)
    dry.add_argument("--sample", type=int, default=None, help="files to extract (0: all)")
    dry.add_argument("--price", type=float, default=None, help="USD per 1M tokens (remote)")
    dry.add_argument("--json", action="store_true")
    build = sub.add_parser("build", help="build with partitioned (distributed) extraction")
    build.add_argument("path", type=Path, nargs="?", default=Path("."))
    build.add_argument("--index-dir", type=Path)
    build.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                       help="run partitions on Ray (local, auto, or ray://host:10001)")  # fmt: skip
    build.add_argument("--partitions", type=int)
    build.add_argument("--embed", action="store_true", help="embed in the workers too")
    build.add_argument("--memory", help="memory budget for this machine's workers, e.g. 6G")
    build.add_argument("--modalities", help="comma-separated (default: all)")
    build.add_argument("--rebuild", action="store_true")
    build.add_argument("--json", action="store_true")
    return parser


def _dry_run(args: argparse.Namespace) -> int:
    from maguyva.scale.dryrun import (
        SAMPLE_FILES,
        VOYAGE_CODE_3_USD_PER_MTOK,
        dry_run,
        format_report,
    )

    config: dict[str, Any] = {}
    if args.index_dir:
        config["index_dir"] = str(args.index_dir)
    report = dry_run(
        args.path, config,
        sample=SAMPLE_FILES if args.sample is None else args.sample,
        price_per_mtok=VOYAGE_CODE_3_USD_PER_MTOK if args.price is None else args.price,
    )  # fmt: skip
    print(json.dumps(report.to_dict()) if args.json else format_report(report))
    return 0


def _build(args: argparse.Namespace) -> int:
    from maguyva.build.memory import parse_size, plan_for_budget
    from maguyva.scale.distributed import InlineExecutor, RayExecutor, distributed_build

    config: dict[str, Any] = {}
    if args.index_dir:
        config["index_dir"] = str(args.index_dir)
    if args.modalities:
        config["modalities"] = [m.strip() for m in args.modalities.split(",") if m.strip()]
    num_cpus = None
    if args.memory:
        num_cpus = plan_for_budget(parse_size(args.memory)).jobs
        config["jobs"] = num_cpus
    executor: Any = InlineExecutor()
    if args.ray is not None:
        address = None if args.ray == "local" else args.ray
        executor = RayExecutor(address, num_cpus=num_cpus)
    try:
        summary, stats = distributed_build(
            args.path, executor=executor, partitions=args.partitions, embed=args.embed,
            config=config, rebuild=args.rebuild,
        )  # fmt: skip
    finally:
        if isinstance(executor, RayExecutor):
            executor.shutdown()
    if args.json:
        from dataclasses import asdict

        print(json.dumps({"summary": asdict(summary), "segments": stats.to_dict()}))
    else:
        print(f"indexed {summary.files} files, {summary.chunks} chunks -> {summary.index_dir} "
              f"(generation {summary.generation}); segments: {stats.computed} computed, "
              f"{stats.reused} reused of {stats.partitions}")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _dry_run(args) if args.command == "dry-run" else _build(args)
    except MaguyvaError as exc:
        print(f"maguyva: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
