"""The `maguyva` command line: index, search, status.

Exit codes follow ripgrep: 0 when results were found, 1 when none, 2 on error. Errors are one
line on stderr; set MAGUYVA_DEBUG=1 to see a traceback for an unexpected failure.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from .errors import BadQueryError, MaguyvaError
from .model import MODALITIES, Response

EXIT_FOUND, EXIT_NONE, EXIT_ERROR = 0, 1, 2


def _parse_weights(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    weights: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise BadQueryError(f"--weights expects name=number pairs, got {part!r}") from None
        if not sep:
            raise BadQueryError(f"--weights expects name=number pairs, got {part!r}")
    return weights


def _parse_modalities(text: str | None) -> list[str] | None:
    if not text:
        return None
    return [m.strip() for m in text.split(",") if m.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="maguyva",
        description="Code search that classifies each question and fuses the right retrievers.",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    index = sub.add_parser("index", help="index a repository (default: current directory)")
    index.add_argument("path", nargs="?", default=".", type=Path)
    index.add_argument(
        "--index-dir", type=Path, help="where the index lives (default PATH/.maguyva)"
    )
    index.add_argument("--modalities", help="comma-separated modalities to build (default: all)")
    index.add_argument("--wait", action="store_true", help="wait for another writer to finish")
    index.add_argument("--json", action="store_true", help="print the build summary as JSON")

    search = sub.add_parser("search", help="ask a question about the indexed repository")
    search.add_argument("query")
    search.add_argument("--root", type=Path, default=Path("."), help="repository root (default .)")
    search.add_argument("--index-dir", type=Path)
    search.add_argument("--json", action="store_true", help="machine-readable output")
    search.add_argument("--preset", default="default", choices=["quick", "default", "thorough"])
    search.add_argument("--modalities", help=f"comma-separated subset of {','.join(MODALITIES)}")
    search.add_argument(
        "--weights", help="e.g. text=0.5,semantic=0.5 (manual tuning: prefer presets)"
    )
    search.add_argument("--k", type=int, help="RRF k constant (default: the preset's)")
    search.add_argument("-n", "--limit", type=int, default=10, help="number of results")
    search.add_argument("--explain", action="store_true", help="show intent, routing, provenance")
    search.add_argument("--snippet", help="find code similar to this snippet")

    status = sub.add_parser("status", help="what is indexed, how fresh")
    status.add_argument("--root", type=Path, default=Path("."))
    status.add_argument("--index-dir", type=Path)
    status.add_argument("--json", action="store_true")
    return parser


def _progress(quiet: bool):
    last = [0.0]

    def report(phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if quiet or (now - last[0] < 0.5 and done < total):
            return
        last[0] = now
        print(f"maguyva: {phase}: {done}/{total}", file=sys.stderr)

    return report


def cmd_index(args: argparse.Namespace) -> int:
    from .indexer import build_index

    overrides: dict[str, Any] = {"index_dir": str(args.index_dir) if args.index_dir else None}
    if args.modalities:
        overrides["modalities"] = _parse_modalities(args.modalities)
    summary = build_index(
        args.path, config=overrides, progress=_progress(args.quiet), wait_for_lock=args.wait
    )
    if args.json:
        print(json.dumps(_asdict(summary)))
        return EXIT_FOUND
    print(f"indexed {summary.files} files, {summary.chunks} chunks -> {summary.index_dir} "
          f"(generation {summary.generation})")  # fmt: skip
    for name, status in summary.modalities.items():
        took = summary.timings_s.get(name, 0.0)
        state = "built" if status.get("built") else f"unavailable: {status.get('reason')}"
        print(f"  {name:<10} {state} ({took:.2f}s)")
    if summary.skipped:
        skipped = ", ".join(
            f"{reason} {count}" for reason, count in sorted(summary.skipped.items())
        )
        print(f"  skipped: {skipped}")
    return EXIT_FOUND


def _asdict(obj: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(obj)


def format_response(response: Response, explain: bool) -> str:
    """Human-readable results: path:start-end, symbol, snippet; provenance with --explain."""
    out: list[str] = []
    if explain:
        out.append(
            f"intent: {response.intent} (confidence {response.confidence:.2f}, rule "
            f"{response.rule})  target: {response.target!r}"
        )
        weights = ", ".join(f"{m}={w:g}" for m, w in response.weights.items())
        out.append(
            f"strategy: {response.fusion_strategy}  preset: {response.preset}  k: {response.k}  "
            f"modalities: {', '.join(response.modalities) or '-'}  weights: {weights}"
        )
        for name, reason in response.unavailable.items():
            out.append(f"unavailable: {name}: {reason}")
        for note in response.notes:
            out.append(f"note: {note}")
        timing = ", ".join(f"{k} {v:.2f}ms" for k, v in response.timings_ms.items())
        out.append(f"timings: {timing}; total {response.total_ms:.2f}ms")
        out.append("")
    for number, result in enumerate(response.results, start=1):
        label = f" {result.symbol}" if result.symbol else ""
        flags = " [stale]" if result.stale else ""
        flags += " [demoted]" if result.demoted else ""
        out.append(f"{number}. {result.path}:{result.start_line}-{result.end_line}{label}{flags}")
        if result.lines:
            shown = ", ".join(str(n) for n in result.lines[:20])
            more = f" (+{len(result.lines) - 20})" if len(result.lines) > 20 else ""
            out.append(f"   lines: {shown}{more}")
        if explain:
            parts = [f"{p.modality}#{p.rank + 1}={p.contribution:.5f}" for p in result.provenance]
            out.append(
                f"   score {result.score:.5f} = ({' + '.join(parts)}) x boost {result.boost:.3f}"
                + (" x demotion" if result.demoted else "")
            )
        for line in result.snippet.splitlines()[:4]:
            out.append(f"   | {line}")
    if not response.results:
        out.append("no results")
    return "\n".join(out)


def cmd_search(args: argparse.Namespace) -> int:
    from .engine import Engine

    engine = Engine.open(args.root, args.index_dir)
    response = engine.search(
        args.query,
        preset=args.preset,
        modalities=_parse_modalities(args.modalities),
        weights=_parse_weights(args.weights),
        k=args.k,
        limit=args.limit,
        snippet=args.snippet,
    )
    if args.json:
        print(json.dumps(response.to_dict(), ensure_ascii=False))
    else:
        print(format_response(response, args.explain))
    return EXIT_FOUND if response.results else EXIT_NONE


def cmd_status(args: argparse.Namespace) -> int:
    from .store import IndexDir, default_index_dir

    root = args.root.resolve()
    index = IndexDir(args.index_dir or default_index_dir(root))
    generation = index.current()
    manifest = generation.manifest
    age = time.time() - float(manifest.get("committed_at", time.time()))
    if args.json:
        print(json.dumps({"generation": generation.number, "path": str(generation.path),
                          "age_s": round(age, 1), **manifest}))  # fmt: skip
        return EXIT_FOUND
    print(f"index: {index.path} (generation {generation.number}, built {age:.0f}s ago)")
    print(f"root: {manifest.get('root')}  commit: {manifest.get('commit') or '-'}")
    print(f"files: {manifest.get('files')}  chunks: {manifest.get('chunks')}")
    for name, status in manifest.get("modalities", {}).items():
        state = "built" if status.get("built") else f"unavailable: {status.get('reason')}"
        print(f"  {name:<10} {state}")
    skipped = manifest.get("skipped") or {}
    if skipped:
        print("skipped: " + ", ".join(f"{r} {n}" for r, n in sorted(skipped.items())))
    return EXIT_FOUND


COMMANDS = {"index": cmd_index, "search": cmd_search, "status": cmd_status}


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="maguyva: %(levelname)s: %(message)s")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except MaguyvaError as exc:
        print(f"maguyva: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(f"maguyva: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("maguyva: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_FOUND
    except Exception as exc:
        if os.environ.get("MAGUYVA_DEBUG"):
            traceback.print_exc()
        print(
            f"maguyva: internal error: {type(exc).__name__}: {exc} "
            "(set MAGUYVA_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
