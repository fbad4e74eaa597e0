"""The query-set format: JSON Lines, one query per line, with its ground truth.

A line looks like

    {"id": "requests-nl-007", "query": "how are credentials removed on a cross-host redirect",
     "intent": "understand_code", "relevant": [{"path": "src/requests/sessions.py",
     "start": 282, "end": 300, "symbol": "SessionRedirectMixin.rebuild_auth"}],
     "split": "heldout", "source": "hand", "corpus": "requests-2.32.3"}

`relevant` lists the answer spans (1-based, inclusive lines; a span without lines means "the
whole file"). An empty `relevant` list means the right answer is *nothing* (a literal that is
not in the repository): such queries are scored only by whether the system returned nothing.
`split` is "tune" or "heldout"; tuning never reads the held-out half.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from maguyva.errors import ConfigError
from maguyva.model import INTENTS

SPLITS = ("tune", "heldout")


class QuerySetError(ConfigError):
    """A query-set file is missing, malformed, or names an unknown intent or split."""


@dataclass(frozen=True, slots=True)
class Span:
    """One relevant location. `start`/`end` None: any line of `path` counts."""

    path: str
    start: int | None = None
    end: int | None = None
    symbol: str | None = None

    def overlaps(self, path: str, start: int, end: int) -> bool:
        if path != self.path:
            return False
        if self.start is None or self.end is None:
            return True
        return start <= self.end and end >= self.start


@dataclass(frozen=True, slots=True)
class Query:
    """One evaluation query and its ground truth."""

    id: str
    query: str
    intent: str
    relevant: tuple[Span, ...]
    split: str = "tune"
    source: str = "hand"
    corpus: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def expects_empty(self) -> bool:
        """True when the correct answer is that nothing matches."""
        return not self.relevant

    @property
    def relevant_paths(self) -> list[str]:
        return list(dict.fromkeys(span.path for span in self.relevant))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["relevant"] = [
            {k: v for k, v in asdict(span).items() if v is not None} for span in self.relevant
        ]
        if not self.extra:
            out.pop("extra")
        if self.corpus is None:
            out.pop("corpus")
        return out


def split_for(query_id: str, heldout_share: float = 0.5) -> str:
    """A stable pseudo-random split from the id alone (same answer on every machine)."""
    digest = hashlib.sha256(query_id.encode("utf-8")).digest()
    return "heldout" if digest[0] / 256.0 < heldout_share else "tune"


def _span(raw: Any, where: str) -> Span:
    if not isinstance(raw, dict) or not isinstance(raw.get("path"), str) or not raw["path"]:
        raise QuerySetError(f"{where}: each relevant entry needs a non-empty 'path'")
    start, end = raw.get("start"), raw.get("end", raw.get("start"))
    for value in (start, end):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise QuerySetError(f"{where}: line numbers must be integers >= 1, got {value!r}")
    if (start is None) != (end is None) or (start is not None and end < start):
        raise QuerySetError(f"{where}: bad line range {start!r}-{end!r}")
    return Span(raw["path"].replace("\\", "/"), start, end, raw.get("symbol"))


def parse_query(raw: Any, where: str) -> Query:
    """Validate one decoded JSON object into a Query (errors name the file and line)."""
    if not isinstance(raw, dict):
        raise QuerySetError(f"{where}: expected a JSON object")
    for key in ("id", "query", "intent"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise QuerySetError(f"{where}: missing or empty {key!r}")
    if raw["intent"] not in INTENTS:
        raise QuerySetError(
            f"{where}: unknown intent {raw['intent']!r}; choose from {', '.join(INTENTS)}"
        )
    split = raw.get("split", "tune")
    if split not in SPLITS:
        raise QuerySetError(f"{where}: split must be one of {', '.join(SPLITS)}, got {split!r}")
    relevant = raw.get("relevant", [])
    if not isinstance(relevant, list):
        raise QuerySetError(f"{where}: 'relevant' must be a list")
    known = {"id", "query", "intent", "relevant", "split", "source", "corpus", "extra"}
    extra = dict(raw.get("extra") or {})
    extra.update({k: v for k, v in raw.items() if k not in known})
    return Query(
        id=raw["id"], query=raw["query"], intent=raw["intent"],
        relevant=tuple(_span(s, where) for s in relevant), split=split,
        source=str(raw.get("source", "hand")), corpus=raw.get("corpus"), extra=extra,
    )  # fmt: skip


def load_queries(paths: Iterable[Path]) -> list[Query]:
    """Read one or more JSONL query sets; ids must be unique across them."""
    queries: list[Query] = []
    seen: set[str] = set()
    for path in paths:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise QuerySetError(f"{path}: cannot read query set: {exc.strerror or exc}") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            where = f"{path}:{number}"
            try:
                raw = json.loads(line)
            except ValueError as exc:
                raise QuerySetError(f"{where}: invalid JSON: {exc}") from None
            query = parse_query(raw, where)
            if query.id in seen:
                raise QuerySetError(f"{where}: duplicate query id {query.id!r}")
            seen.add(query.id)
            queries.append(query)
    if not queries:
        raise QuerySetError("the query set is empty")
    return queries


def write_queries(path: Path, queries: Iterable[Query]) -> int:
    """Write queries as JSON Lines; returns how many."""
    count = 0
    with open(path, "w", encoding="utf-8") as fh:
        for query in queries:
            fh.write(json.dumps(query.to_dict(), ensure_ascii=False) + "\n")
            count += 1
    return count
