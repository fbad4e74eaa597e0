"""The `maguyva` command line, in ripgrep's manner.

    maguyva index [PATH]                 build or refresh the index
    maguyva search QUERY [PATH...]       ask a question (-i -s -S -w -F -g -t -l -C --json)
    maguyva status                       what is indexed, how fresh
    maguyva config --show                the effective configuration and where each value came from
    maguyva mcp --root PATH [--watch]    the MCP server on stdio (--watch: keep it current)

Exit codes follow ripgrep: 0 when results were found, 1 when none, 2 on error. Results go to
stdout; progress, warnings and errors to stderr. Errors are one line; set MAGUYVA_DEBUG=1 to
see a traceback for an unexpected failure.

Adding a subcommand: one `_add_...` function in `maguyva.interfaces.cli.parser` and one entry
in `COMMANDS`; the handler takes the parsed arguments and returns an exit code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from maguyva.config import TRUST_ENV
from maguyva.errors import BadQueryError, MaguyvaError
from maguyva.interfaces.cli.durability import commands as durability_commands
from maguyva.interfaces.cli.parser import build_parser
from maguyva.interfaces.output import (
    Renderer,
    dumps_json,
    format_response,
    use_color,
    write_lines,
)
from maguyva.interfaces.shaping import modality_state

EXIT_FOUND, EXIT_NONE, EXIT_ERROR = 0, 1, 2

__all__ = ["COMMANDS", "build_parser", "format_response", "main"]


def _parse_weights(text: str | None) -> dict[str, float] | None:
    if not text:
        return None
    weights: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        if not sep:
            raise BadQueryError(f"--weights expects name=number pairs, got {part!r}")
        try:
            weight = float(value)
        except ValueError:
            raise BadQueryError(f"--weights expects name=number pairs, got {part!r}") from None
        if not math.isfinite(weight) or weight < 0:
            raise BadQueryError(f"--weights: {part!r} is not a finite number >= 0")
        weights[name.strip()] = weight
    return weights


def _check_search_args(args: argparse.Namespace) -> None:
    """Refuse flag values that would otherwise match nothing, silently (ripgrep refuses an
    unknown type and a bad glob the same way)."""
    from maguyva.query.filters import check_kind, check_language
    from maguyva.query.syntax import check_glob, check_literal

    if args.fixed_strings:
        check_literal(args.query)

    for glob in args.glob:
        check_glob(glob.removeprefix("!"))
    for flag, names in (("-t", args.type), ("-T", args.type_not)):
        for name in names:
            check_language(name, flag, "type")
    if args.kind is not None:
        check_kind(args.kind, "--kind")


def _parse_modalities(text: str | None) -> list[str] | None:
    if not text:
        return None
    return [m.strip() for m in text.split(",") if m.strip()]


def find_root(start: Path) -> Path:
    """The nearest ancestor of `start` holding an index (`.maguyva/`) or a `.maguyva.toml`;
    `start` itself when there is none (like git finding its work tree)."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".maguyva" / "manifest.json").is_file():
            return candidate
        if (candidate / ".maguyva.toml").is_file():
            return candidate
    return start


def _root(args: argparse.Namespace) -> Path:
    return Path(args.root).resolve() if args.root else find_root(Path.cwd())


WARM: dict[str, Any] = {}
"""Filled by the warm server (`maguyva.interfaces.daemon`), which runs `main` per question:
`open_index` (its `Index.open`, reusing open indexes) and `parser` (built once)."""


def _open_index(args: argparse.Namespace, **overrides: Any):
    from maguyva.api import Index

    opener = WARM.get("open_index") or Index.open
    return opener(_root(args), index_dir=args.index_dir, **overrides)


def _dry_run(root: Path, args: argparse.Namespace, settings: dict[str, Any]) -> int:
    from maguyva.scale.dryrun import dry_run, format_report

    config: dict[str, Any] = dict(settings)
    if args.index_dir:
        config["index_dir"] = str(args.index_dir)
    if args.modalities:
        config["modalities"] = _parse_modalities(args.modalities)
    report = dry_run(root, config)
    print(dumps_json(report.to_dict()) if args.json else format_report(report))
    return EXIT_FOUND


@contextlib.contextmanager
def _sigint_latch() -> Iterator[threading.Event]:
    """Ctrl-C raises KeyboardInterrupt as usual and also sets the yielded event. Python drops
    an exception raised while a finalizer (`__del__`, a weakref callback) runs, so a Ctrl-C
    landing there would be lost and the build would go on; the event lets the next progress
    call raise it again. Only on the main thread, and only where SIGINT is not ignored."""
    event = threading.Event()
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous in (
        signal.SIG_IGN,
        None,
    ):
        yield event
        return

    def on_sigint(signum: int, frame: Any) -> None:
        event.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield event
    finally:
        signal.signal(signal.SIGINT, previous)


def cmd_index(args: argparse.Namespace) -> int:
    from maguyva.api import Index
    from maguyva.build.progress import reporter
    from maguyva.config import parse_assignment

    root = args.path if args.path is not None else _root(args)
    settings = dict(parse_assignment(text) for text in getattr(args, "set", None) or ())
    if getattr(args, "dry_run", False):
        return _dry_run(root, args, settings)
    memory = getattr(args, "memory", None)
    if memory:
        settings["memory"] = memory
    index = Index.open(root, index_dir=args.index_dir, **settings)
    if getattr(args, "background", False):
        from maguyva.interfaces.cli import background

        argv = background.child_argv(index.root, args)
        return background.run(Path(index.index_dir), argv, args.json, args.quiet)
    memory = index.config.get("memory")
    plan = None
    if memory:
        from maguyva.build.memory import parse_size, plan_for_budget

        plan = plan_for_budget(parse_size(memory))
    with reporter(quiet=args.quiet or args.json) as show, _sigint_latch() as interrupted:

        def progress(phase: str, done: int, total: int) -> None:
            if interrupted.is_set():  # Ctrl-C whose KeyboardInterrupt a finalizer swallowed
                raise KeyboardInterrupt
            show(phase, done, total)

        def build() -> Any:
            return index.build(
                progress=progress,
                wait=args.wait,
                modalities=_parse_modalities(args.modalities),
                rebuild=args.rebuild,
            )

        if plan is None:
            summary = build()
        else:  # an overrun stops the build with a clear error, before the OOM killer would
            from maguyva.build.memory import run_within_budget

            summary = run_within_budget(build, plan.budget)
    if args.json:
        from dataclasses import asdict

        print(dumps_json(asdict(summary)))
        return EXIT_FOUND
    if args.quiet:
        return EXIT_FOUND
    print(f"indexed {summary.files} files, {summary.chunks} chunks -> {summary.index_dir} "
          f"(generation {summary.generation})")  # fmt: skip
    if plan is not None:
        jobs = index.config.get("jobs") or plan.jobs
        print(f"  memory budget {plan.budget >> 20} MiB: {jobs} extraction process(es)")
    for name, status in summary.modalities.items():
        took = summary.timings_s.get(name, 0.0)
        state = modality_state(status)
        print(f"  {name:<10} {state} ({took:.2f}s)")
    if "searchable" in summary.timings_s:  # never gate: it answered before the embedding ended
        print(f"  searchable after {summary.timings_s['searchable']:.1f}s; semantic followed in "
              f"later generations ({summary.timings_s.get('total', 0.0):.1f}s in all)")  # fmt: skip
    if summary.not_started:  # the index remembers its modalities: a new one is asked for
        wanted = ",".join([*summary.built_for, *summary.not_started])
        print(f"  not started: {', '.join(summary.not_started)} (this index was built without "
              f"it; `maguyva index --modalities {wanted}` adds it)")  # fmt: skip
    if summary.skipped:
        skipped = ", ".join(
            f"{reason} {count}" for reason, count in sorted(summary.skipped.items())
        )
        print(f"  skipped: {skipped}")
    from maguyva.repo.ignored_root import ignored_root_note

    note = ignored_root_note(Path(index.root))
    if note is not None:
        print(f"  {note}")
    return EXIT_FOUND


def cmd_search(args: argparse.Namespace) -> int:
    """One question, with the cyclic collector paused: a common literal's answer allocates
    tens of thousands of objects (hits, lines) and frees them by reference counting, and the
    collector's passes over them were ~11% of its CPU (py-spy, issue 21)."""
    from maguyva.support.gcpause import paused_gc

    with paused_gc():
        return _search(args)


def _search(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    index = _open_index(args)
    paths = [_cli_path(index.root, p) for p in args.paths]
    if args.context < 0:
        raise BadQueryError("--context must be >= 0")
    _check_search_args(args)
    if args.max_count is not None and args.max_count < 0:
        raise BadQueryError("--max-count must be >= 0")
    response = index.search(
        args.query,
        preset=args.preset,
        modalities=_parse_modalities(args.modalities),
        weights=_parse_weights(args.weights),
        k=args.k,
        limit=args.limit,
        snippet=args.snippet,
        case=args.case,
        whole_word=args.word_regexp,
        regex=args.regex,
        fixed_strings=args.fixed_strings,
        globs=args.glob,
        languages=args.type,
        kind=args.kind,
        paths=paths,
        syntax=not args.fixed_strings,
    )
    response_regex = args.query if args.regex else None
    if not args.regex and not args.fixed_strings:
        from maguyva.query.syntax import parse

        try:
            response_regex = parse(args.query).regex
        except MaguyvaError:
            response_regex = None
    if args.type_not:
        from maguyva.api import normalize_language
        from maguyva.repo.languages import detect_language

        banned = {normalize_language(t) for t in args.type_not}
        response.results = [r for r in response.results if detect_language(r.path) not in banned]
    code = EXIT_FOUND if response.results else EXIT_NONE
    nothing_ran = not response.results and not response.modalities and response.unavailable
    if nothing_ran and not response.damaged:  # nothing could answer: an error, not "no match"
        reasons = "; ".join(f"{m}: {r}" for m, r in response.unavailable.items())
        raise MaguyvaError(f"no retriever could answer ({reasons}); build it with "
                           "`maguyva index --modalities ...`")  # fmt: skip
    if response.damaged:  # never silently wrong: say which part failed and how to fix it
        for name, reason in response.damaged.items():
            print(f"maguyva: warning: {name} index unusable, this answer is incomplete: "
                  f"{reason}", file=sys.stderr)  # fmt: skip
        code = EXIT_ERROR
    if args.quiet:
        return code
    color = use_color(args.color or index.config.get("color", "auto"), sys.stdout)
    renderer = Renderer(index.root, color=color and not args.json, context=args.context,
                        regex=response_regex, case=response_case(args), explain=args.explain,
                        max_count=args.max_count)  # fmt: skip
    if args.json:
        write_lines(renderer.json_lines(response, time.perf_counter() - started))
    elif args.files_with_matches:
        write_lines(renderer.files(response))
    else:
        write_lines(renderer.text(response))
    return code


def _cli_path(root: Path, path: str) -> str:
    """A PATH argument (relative to the working directory, or absolute) as a root-relative
    path; refused in the words the user typed when it leaves the root."""
    from maguyva.errors import PathEscapeError
    from maguyva.repo.paths import escape_error, relative

    full = os.path.join(os.getcwd(), path)
    try:
        rel = relative(root, full, allow_absolute=True)
    except PathEscapeError:
        raise escape_error(path) from None
    if not os.path.exists(full):  # as in ripgrep, a PATH that does not exist is an error
        raise BadQueryError(f"{path}: No such file or directory")
    return rel


def response_case(args: argparse.Namespace) -> str | None:
    return "sensitive" if args.fixed_strings and args.case is None else args.case


def cmd_status(args: argparse.Namespace) -> int:
    status = _open_index(args).status()
    if args.json:
        print(dumps_json(status))
        return EXIT_FOUND
    print(f"index: {status['index_dir']} (generation {status['generation']}, "
          f"built {status['age_s']:.0f}s ago)")  # fmt: skip
    print(f"root: {status['root']}  commit: {status['commit'] or '-'}")
    print(f"files: {status['files']}  chunks: {status['chunks']}  "
          f"stale: {status['stale_files']}")  # fmt: skip
    for name, state in status["modalities"].items():
        shown = modality_state(state)
        if state.get("damaged"):
            shown = f"DAMAGED: {state['damaged']}"
        if state.get("behind"):  # maguyva.build.follow: the next generation brings it up to date
            behind = state["behind"]
            shown += (f", behind: reflects generation {behind.get('generation')}, "
                      f"{len(behind.get('paths') or ())} file(s) changed since")  # fmt: skip
        if state.get("coverage"):  # semantic follows a large build: how far it got
            from maguyva.modalities.semantic.coverage import describe

            shown += ", " + describe(state["coverage"]).removeprefix("semantic: ")
        print(f"  {name:<10} {shown}")
    if status.get("build"):  # another process is building: progress.json in the index dir
        from maguyva.build.progress import describe_running

        print(f"building: {describe_running(status['build'])}")
    if status["skipped"]:
        print("skipped: " + ", ".join(f"{r} {n}" for r, n in sorted(status["skipped"].items())))
    big = status.get("large") or {}
    print(f"over the size cap, indexed: {big.get('over_cap', 0)}  "
          f"of them generated or minified: {big.get('generated', 0)}")  # fmt: skip
    return EXIT_FOUND


def cmd_config(args: argparse.Namespace) -> int:
    from maguyva.config import effective_config, show

    config = effective_config(_root(args), {"index_dir": args.index_dir})
    rows = show(config)
    if args.json:
        print(dumps_json({"files": config.files, "settings": rows}))
        return EXIT_FOUND
    width = max(len(r["key"]) for r in rows)
    for row in rows:
        print(f"{row['key']:<{width}} = {json.dumps(row['value'])}  # {row['source']}")
    return EXIT_FOUND


def cmd_mcp(args: argparse.Namespace) -> int:
    from maguyva.interfaces.mcp_server import serve

    serve(_root(args), index_dir=args.index_dir, log_level=args.log_level, watch=args.watch)
    return EXIT_FOUND


COMMANDS = {
    "index": cmd_index,
    "search": cmd_search,
    "status": cmd_status,
    "config": cmd_config,
    "mcp": cmd_mcp,
    "eval": lambda args: _eval_cli().cmd_eval(args),
    "tune": lambda args: _eval_cli().cmd_tune(args),
}
COMMANDS.update(durability_commands(cmd_index, _root))


def _eval_cli() -> Any:
    from maguyva.eval import cli

    return cli


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.WARNING, format="maguyva: %(levelname)s: %(message)s", stream=sys.stderr
    )
    parser = WARM.get("parser") or build_parser()
    for arg in sys.argv[1:] if argv is None else argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # undecodable bytes arrive as lone surrogates
            shown = os.fsencode(arg).decode("ascii", "backslashreplace")
            print(f"maguyva: error: argument {shown!r} is not valid UTF-8", file=sys.stderr)
            return EXIT_ERROR
    try:
        args, extra = parser.parse_known_args(argv)
        # ripgrep takes PATHs after flags (`search foo -l src`): argparse leaves them over
        if extra and args.command == "search" and not any(e.startswith("-") for e in extra):
            args.paths = [*args.paths, *extra]
        elif extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse: usage errors are exit 2, --help/--version exit 0
        return int(exc.code or 0)
    if getattr(args, "trust_repo_config", False):  # every layer below reads it (and children)
        os.environ[TRUST_ENV] = "1"
    try:
        return COMMANDS[args.command](args)
    except MaguyvaError as exc:
        print(f"maguyva: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_FOUND
    except OSError as exc:
        print(f"maguyva: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("maguyva: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get("MAGUYVA_DEBUG"):
            traceback.print_exc()
        print(
            f"maguyva: internal error: {type(exc).__name__}: {exc} "
            "(set MAGUYVA_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return EXIT_ERROR


def _silence_stdout() -> None:
    """After a closed pipe (`maguyva search x | head`), stop Python's exit-time flush error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
