"""`maguyva eval` and `maguyva tune`: argument definitions and command functions.

`maguyva/interfaces/cli/main.py` only registers these (one parser block and one COMMANDS entry each).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maguyva.errors import (
    ConfigError,
    CorruptIndexError,
    IndexNotFoundError,
    IndexVersionError,
    MaguyvaError,
)
from maguyva.eval.queryset import SPLITS, Query, load_queries

if TYPE_CHECKING:
    from maguyva.query.engine import Engine

EXIT_OK, EXIT_ERROR = 0, 2


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `maguyva eval` (also `--generate`, which writes a query set instead)."""
    parser.add_argument("queries", nargs="*", type=Path, help="query sets (JSON Lines)")
    _common(parser)
    parser.add_argument("--systems", help="comma-separated systems to run (default: all), e.g. "
                        "text-only,preset:default,baseline:bm25")  # fmt: skip
    parser.add_argument("--no-baselines", action="store_true", help="skip ripgrep and BM25")
    parser.add_argument("--oracle-intent", action="store_true",
                        help="route by the labelled intent instead of the classifier")  # fmt: skip
    parser.add_argument("--profile", type=Path, help="also evaluate a tuned profile (JSON)")
    parser.add_argument("--no-per-intent", action="store_true", help="overall table only")
    parser.add_argument("--generate", action="store_true",
                        help="write a query set drawn from --root (ctags, Jedi, rg) to --output")  # fmt: skip
    parser.add_argument("--output", type=Path, help="with --generate: the JSONL file to write")
    parser.add_argument("--per-kind", type=int, default=25,
                        help="with --generate: queries per kind (default 25)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="with --generate: sampling seed")
    parser.add_argument("--phrasings", action="store_true",
                        help="score the intent classifier on eval/phrasings/ (--split tune|heldout), "
                        "or on the phrasing files named (whole, or the hash half --split names)")  # fmt: skip


def add_tune_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `maguyva tune`."""
    parser.add_argument("queries", nargs="+", type=Path, help="query sets (JSON Lines)")
    _common(parser, split=False)
    parser.add_argument("--save", type=Path, help="write the tuned profile (JSON) here")
    parser.add_argument("--min-queries", type=int, default=4,
                        help="tune an intent only with at least this many tuning queries")  # fmt: skip
    parser.add_argument("--metric", default="file.mrr@10",
                        help="objective: file|line . mrr@10|ndcg@10|recall@10 (default file.mrr@10)")  # fmt: skip


def _common(parser: argparse.ArgumentParser, split: bool = True) -> None:
    """Shared flags; --root, --index-dir and -q come from the main CLI's common parent
    (--root defaults to the query set's named corpus, downloaded once)."""
    parser.add_argument("--reindex", action="store_true", help="rebuild the index first")
    parser.add_argument("--modalities", help="with a fresh index: modalities to build")
    if split:
        parser.add_argument("--split", default="all", choices=[*SPLITS, "all"])
    parser.add_argument("--max-results", "--limit", dest="limit", type=int, default=10,
                        help="results per query (as `maguyva search --max-results`)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the JSON report")
    parser.add_argument("--out", type=Path, help="also write the JSON report to this file")


def _progress(quiet: bool):
    def report(name: str, done: int, total: int) -> None:
        if not quiet and (done == total or done % 25 == 0):
            print(f"maguyva eval: {name}: {done}/{total}", file=sys.stderr)

    return report


def prepare(args: argparse.Namespace, queries: list[Query]) -> Engine:
    """Resolve the repository (named corpus or --root), index it when needed, open it."""
    root, named = args.root, args.root is None
    if root is None:
        corpora = {q.corpus for q in queries}
        if len(corpora) != 1 or None in corpora:
            raise ConfigError(
                "pass --root: the query sets name no single corpus "
                f"({', '.join(sorted(str(c) for c in corpora))})"
            )
        from maguyva.eval.corpora import fetch_corpus  # here: tarfile is no search's import

        root = fetch_corpus(corpora.pop())
    from maguyva.query.engine import Engine

    root = Path(root).resolve()
    if not args.reindex:
        try:
            return Engine.open(root, args.index_dir)
        except IndexNotFoundError:
            pass
        except (CorruptIndexError, IndexVersionError) as exc:
            if not named:  # never rebuild a user's index behind their back
                raise ConfigError(f"{exc}; rerun with --reindex") from None
    from maguyva.build.indexer import build_index

    overrides: dict[str, Any] = {"index_dir": str(args.index_dir) if args.index_dir else None}
    if args.modalities:
        overrides["modalities"] = [m.strip() for m in args.modalities.split(",") if m.strip()]
    if not getattr(args, "quiet", False):
        print(f"maguyva eval: indexing {root}", file=sys.stderr)
    build_index(root, config=overrides)
    return Engine.open(root, args.index_dir)


def _emit(args: argparse.Namespace, payload: dict[str, Any], text: str) -> None:
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(payload) if args.json else text)


def cmd_eval(args: argparse.Namespace) -> int:
    """`maguyva eval`: score every system side by side (or `--generate` a query set)."""
    if args.generate:
        return _cmd_generate(args)
    if args.phrasings:
        from maguyva.eval import phrasings

        files = [arg for path in args.queries for arg in ("--file", str(path))]
        split = args.split.replace("tune", "dev")
        if not files and split == "all":
            split = "heldout"
        return phrasings.main(["--split", split, *files, *(["--json"] if args.json else [])])
    if not args.queries:
        raise ConfigError("name at least one query set (JSON Lines), or use --generate")
    from maguyva.eval.report import format_report
    from maguyva.eval.runner import run_eval
    from maguyva.eval.tune import load_profile

    queries = load_queries(args.queries)
    if args.split != "all":
        queries = [q for q in queries if q.split == args.split]
        if not queries:
            raise ConfigError(f"no queries in split {args.split!r}")
    engine = prepare(args, queries)
    wanted = [s.strip() for s in args.systems.split(",")] if args.systems else None
    systems, unavailable = build_systems(engine, wanted, args.no_baselines, args.oracle_intent)
    if args.profile:
        profile = load_profile(args.profile)
        systems.append(profile.system(engine, oracle_intent=args.oracle_intent))
    if not systems:
        raise ConfigError("no system to run (check --systems)")
    report = run_eval(engine, queries, systems, unavailable=unavailable, limit=args.limit,
                      progress=_progress(getattr(args, "quiet", False)),
                      meta={"split": args.split, "oracle_intent": args.oracle_intent,
                            "query_sets": [str(p) for p in args.queries]})  # fmt: skip
    _emit(args, report.to_dict(), format_report(report, per_intent=not args.no_per_intent))
    return EXIT_OK


def build_systems(engine: Engine, wanted: list[str] | None, no_baselines: bool,
                  oracle_intent: bool) -> tuple[list[Any], dict[str, str]]:  # fmt: skip
    """Engine configurations plus the baselines (unless excluded)."""
    from maguyva.eval.baselines import BM25Baseline, RipgrepBaseline
    from maguyva.eval.systems import BASELINE_NAMES, engine_systems

    systems: list[Any]
    systems, unavailable = engine_systems(engine, wanted, oracle_intent)
    known = {s.name for s in systems} | set(unavailable) | set(BASELINE_NAMES)
    for name in wanted or []:
        if name not in known and not name.startswith(("semantic", "text", "structural", "graph",
                                                       "preset:")):  # fmt: skip
            raise ConfigError(f"unknown system {name!r}; known: {', '.join(sorted(known))}")
    if not no_baselines:
        if not wanted or "baseline:ripgrep" in wanted:
            try:
                systems.append(RipgrepBaseline(engine.root, engine.chunks.paths()))
            except MaguyvaError as exc:
                unavailable["baseline:ripgrep"] = str(exc)
        if not wanted or "baseline:bm25" in wanted:
            try:
                systems.append(BM25Baseline(engine.chunks))
            except MaguyvaError as exc:
                unavailable["baseline:bm25"] = str(exc)
    return systems, unavailable


def _cmd_generate(args: argparse.Namespace) -> int:
    from maguyva.eval.generate import generate_queries
    from maguyva.eval.queryset import write_queries

    if args.root is None or args.output is None:
        raise ConfigError("--generate needs --root (the repository) and --output (a .jsonl file)")
    queries, report = generate_queries(args.root.resolve(), per_kind=args.per_kind,
                                       seed=args.seed)  # fmt: skip
    count = write_queries(args.output, queries)
    summary = ", ".join(f"{k} {v}" for k, v in report.items())
    print(f"wrote {count} queries to {args.output} ({summary})")
    return EXIT_OK


def cmd_tune(args: argparse.Namespace) -> int:
    """`maguyva tune`: search weights and k per intent on the tuning half; report held-out."""
    from maguyva.eval.tune import format_tuning, tune

    queries = load_queries(args.queries)
    engine = prepare(args, queries)
    result = tune(engine, queries, metric=args.metric, min_queries=args.min_queries,
                  limit=args.limit, progress=_progress(getattr(args, "quiet", False)))  # fmt: skip
    if args.save:
        result.profile.save(args.save)
    _emit(args, result.to_dict(), format_tuning(result))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """`python -m maguyva.eval {eval,tune}`: the same commands without the main CLI."""
    parser = argparse.ArgumentParser(prog="python -m maguyva.eval")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true")
    common.add_argument("--root", type=Path, help="repository root")
    common.add_argument("--index-dir", type=Path, help="index location (default ROOT/.maguyva)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_eval_arguments(sub.add_parser("eval", parents=[common], help="score a query set"))
    add_tune_arguments(sub.add_parser("tune", parents=[common], help="tune weights and k"))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `eval` or `tune`; errors are one line on stderr and exit code 2."""
    args = build_parser().parse_args(argv)
    try:
        return cmd_eval(args) if args.command == "eval" else cmd_tune(args)
    except (MaguyvaError, OSError) as exc:
        print(f"maguyva: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
