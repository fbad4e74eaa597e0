"""Fill in the line ranges of a query set's answers from their symbols, with Universal Ctags.

Hand-written questions name their answers by symbol (`{"path": "src/requests/sessions.py",
"symbol": "SessionRedirectMixin.rebuild_auth"}`); this turns each into the definition's line
span, so the committed set needs no tool to load. Run it again after upgrading a corpus:

    python -m maguyva.eval.resolve eval/requests-2.32.3.jsonl --root .cache/eval/requests-2.32.3
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from maguyva.errors import MaguyvaError
from maguyva.eval.ctags import resolve_symbol, run_ctags
from maguyva.eval.queryset import Query, Span, load_queries, write_queries


def resolve_queries(queries: list[Query], root: Path) -> list[Query]:
    """Queries whose symbol-named spans carry ctags' line ranges (one span per definition)."""
    tags = run_ctags(root)
    out = []
    for query in queries:
        spans: list[Span] = []
        for span in query.relevant:
            if span.symbol is None:
                spans.append(span)
                continue
            for tag in resolve_symbol(tags, span.path, span.symbol):
                spans.append(Span(span.path, tag.line, tag.end, span.symbol))
        out.append(replace(query, relevant=tuple(spans)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maguyva.eval.resolve")
    parser.add_argument("queries", type=Path)
    parser.add_argument("--root", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        queries = resolve_queries(load_queries([args.queries]), args.root)
    except MaguyvaError as exc:
        print(f"resolve: error: {exc}", file=sys.stderr)
        return 2
    write_queries(args.queries, queries)
    print(f"resolved {len(queries)} queries in {args.queries}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
