"""The `maguyva` argument parser: one small function per subcommand group.

`build_parser` calls them in the order `maguyva --help` lists the subcommands, and each adds its
options in the order the subcommand's `--help` lists them (`tests/test_cli_help.py` snapshots
both). Adding a subcommand: one `_add_...(sub, common)` function called from `build_parser`,
and one entry in `maguyva.interfaces.cli.main.COMMANDS`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from maguyva.interfaces.cli.durability import add_subcommands as add_durability_subcommands
from maguyva.model import MODALITIES

Subparsers = Any  # argparse's `_SubParsersAction`, private in typeshed's spelling


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="maguyva",
        description="Code search that classifies each question and fuses the right retrievers.",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or output")
    parser.add_argument("--version", action="version", version=f"maguyva {_version()}")
    common = _common_options()
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_index(sub, common)  # with watch, fsck and index --repair
    _add_search(sub, common)
    _add_status_config_mcp(sub, common)
    _add_eval(sub, common)
    return parser


def _version() -> str:
    from maguyva import __version__

    return __version__


def _common_options() -> argparse.ArgumentParser:
    """The options every subcommand takes, as a parent parser."""
    # Subcommands repeat -q after their name (ripgrep users put flags last); SUPPRESS keeps
    # the global value when the subcommand does not set it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS)
    common.add_argument("--root", type=Path, help="repository root (default: nearest indexed)")
    common.add_argument("--index-dir", type=Path, help="index location (default ROOT/.maguyva)")
    common.add_argument(
        "--trust-repo-config", action="store_true", default=argparse.SUPPRESS,
        help="let the repository's own .maguyva.toml / pyproject.toml set keys that widen what "
        "is read or where code is sent (follow_symlinks, embedding_provider, allow_large, ...)",
    )  # fmt: skip
    return common


def _add_index(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`index`, then the durability subcommands (`watch`, `fsck`), which also add `--repair`
    to `index` between its build options and its output options."""
    index = sub.add_parser("index", parents=[common], help="index a repository")
    index.add_argument("path", nargs="?", type=Path, help="repository (default: --root or .)")
    index.add_argument("--modalities", help="comma-separated modalities to build (default: all)")
    index.add_argument("--wait", action="store_true", help="wait for another writer to finish")
    index.add_argument("--rebuild", action="store_true", help="from scratch, ignoring caches")
    index.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="set a configuration key for this run (repeatable; keys: "
                       "`maguyva config`)")  # fmt: skip
    index.add_argument(
        "--background", action="store_true",
        help="return once the index answers (text, structural, graph); embedding goes on in a "
        "detached process (`maguyva status` shows it; the next index run resumes it if killed)",
    )  # fmt: skip
    add_durability_subcommands(sub, common, index)  # watch, fsck, index --repair
    index.add_argument("--json", action="store_true", help="print the build summary as JSON")
    index.add_argument(
        "--memory", metavar="SIZE",
        help="memory budget, e.g. 6G (config key `memory`; capped by the cgroup limit): sets "
        "the extraction processes, and a build that outgrows it stops with an error",
    )  # fmt: skip
    index.add_argument(
        "--dry-run", action="store_true",
        help="estimate files, bytes, chunks, tokens and cost (remote provider), the largest "
        "directories and the skipped files; write nothing",
    )  # fmt: skip


def _add_search(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    search = sub.add_parser(
        "search", parents=[common], help="ask a question about the indexed repository"
    )
    search.add_argument("query", help='plain words, or "phrase", /regex/, file:, lang:, sym:...')
    search.add_argument("paths", nargs="*", metavar="PATH", help="only results under these")
    _add_search_matching(search)
    _add_search_output(search)
    _add_search_routing(search)


def _add_search_matching(search: argparse.ArgumentParser) -> None:
    """ripgrep's flags for what matches: case, words, literal or regex, globs, languages."""
    case = search.add_mutually_exclusive_group()
    case.add_argument("-i", "--ignore-case", dest="case", action="store_const",
                      const="insensitive", help="case-insensitive")  # fmt: skip
    case.add_argument("-s", "--case-sensitive", dest="case", action="store_const",
                      const="sensitive", help="case-sensitive")  # fmt: skip
    case.add_argument("-S", "--smart-case", dest="case", action="store_const", const="smart",
                      help="case-insensitive unless the query has an upper-case letter")  # fmt: skip
    search.add_argument("-w", "--word-regexp", action="store_true", help="whole words only")
    search.add_argument("-F", "--fixed-strings", action="store_true",
                        help="the query is one literal string (no syntax, exact match)")  # fmt: skip
    search.add_argument("--regex", action="store_true", help="the query is a regular expression")
    search.add_argument("-g", "--glob", action="append", default=[], metavar="GLOB",
                        help="include paths matching GLOB; !GLOB excludes (repeatable)")  # fmt: skip
    search.add_argument("-t", "--type", action="append", default=[], metavar="TYPE",
                        help="only this language (py, rust, go, ...; repeatable)")  # fmt: skip
    search.add_argument("-T", "--type-not", action="append", default=[], metavar="TYPE",
                        help="not this language (repeatable)")  # fmt: skip


def _add_search_output(search: argparse.ArgumentParser) -> None:
    """ripgrep's flags for what is printed: paths only, context, counts, JSON, colour."""
    search.add_argument("-l", "--files-with-matches", action="store_true",
                        help="print only the paths of results")  # fmt: skip
    search.add_argument("-C", "--context", type=int, default=0, metavar="N",
                        help="show N lines around each match line")  # fmt: skip
    search.add_argument("-n", "--line-number", action="store_true",
                        help="accepted for ripgrep compatibility (always on)")  # fmt: skip
    search.add_argument("-m", "--max-count", type=int, metavar="NUM",
                        help="at most NUM matching lines per file, as in ripgrep")  # fmt: skip
    search.add_argument("--max-results", "--limit", dest="limit", type=int, metavar="NUM",
                        help="number of results, one per file (default 10)")  # fmt: skip
    search.add_argument("--json", action="store_true", help="ripgrep-style JSON Lines")
    search.add_argument("--color", "--colour", choices=["auto", "always", "never"])


def _add_search_routing(search: argparse.ArgumentParser) -> None:
    """Maguyva's own flags: which retrievers answer and how they are fused, and where."""
    search.add_argument("--preset", choices=["quick", "default", "thorough"])
    search.add_argument("--modalities", help=f"comma-separated subset of {','.join(MODALITIES)}")
    search.add_argument("--weights", help="e.g. text=0.5,semantic=0.5 (manual tuning: prefer presets)")  # fmt: skip
    search.add_argument("--k", type=int, help="RRF k constant (default: the preset's)")
    search.add_argument("--kind", help="definition kind to prefer (class, function, ...)")
    search.add_argument("--explain", action="store_true", help="show intent, routing, provenance")
    search.add_argument("--snippet", help="find code similar to this snippet")
    search.add_argument("--no-daemon", action="store_true",
                        help="answer in this process, not through the warm server "
                        "(also MAGUYVA_DAEMON=0)")  # fmt: skip


def _add_status_config_mcp(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    status = sub.add_parser("status", parents=[common], help="what is indexed, how fresh")
    status.add_argument("--json", action="store_true")

    config = sub.add_parser("config", parents=[common], help="the effective configuration")
    config.add_argument("--show", action="store_true", help="print every key (default)")
    config.add_argument("--json", action="store_true")

    mcp = sub.add_parser("mcp", parents=[common], help="serve the MCP tools over stdio")
    mcp.add_argument("--log-level", default="WARNING",
                     choices=["DEBUG", "INFO", "WARNING", "ERROR"])  # fmt: skip
    mcp.add_argument("--watch", action="store_true",
                     help="keep the index current while serving (as `maguyva watch`)")  # fmt: skip


def _add_eval(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    """`eval` and `tune`, whose options `maguyva.eval.cli` owns (imported when the parser is
    built, not when the command line module is imported)."""
    from maguyva.eval.cli import add_eval_arguments, add_tune_arguments

    add_eval_arguments(sub.add_parser("eval", parents=[common],
                                      help="score retrieval on a query set, side by side"))  # fmt: skip
    add_tune_arguments(sub.add_parser("tune", parents=[common],
                                      help="tune weights and k per intent on a query set"))  # fmt: skip
