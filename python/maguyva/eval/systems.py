"""The systems an evaluation compares: Maguyva configurations and the external baselines.

A system is anything with a `name` and `search(query, limit) -> list[Ranked]`. Maguyva's are
one engine configuration each: every modality alone, each preset, and optionally a tuned
profile. A configuration that cannot run on this index (its modality is not built) is reported
as unavailable with the engine's reason instead of being scored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from maguyva.errors import MaguyvaError
from maguyva.eval.metrics import Ranked
from maguyva.eval.queryset import Query
from maguyva.model import MODALITIES, Response
from maguyva.query.engine import Engine

PRESET_NAMES = ("quick", "default", "thorough")
BASELINE_NAMES = ("baseline:ripgrep", "baseline:bm25")


class System(Protocol):
    name: str

    def search(self, query: str, limit: int) -> list[Ranked]: ...


def ranked_from(response: Response) -> list[Ranked]:
    return [Ranked(r.path, r.start_line, r.end_line, tuple(r.lines)) for r in response.results]


@dataclass
class EngineSystem:
    """One Maguyva configuration: keyword arguments for `Engine.search`.

    `kwargs_for` may vary the arguments per query intent (a tuned profile does). With
    `oracle_intent`, the query's labelled intent replaces the classifier's verdict, which
    separates retrieval quality from classification errors."""

    name: str
    engine: Engine
    kwargs: dict[str, Any] = field(default_factory=dict)
    kwargs_for: Callable[[str], dict[str, Any]] | None = None
    oracle_intent: bool = False
    last: Response | None = None

    def search_query(self, query: Query, limit: int) -> list[Ranked]:
        kwargs = dict(self.kwargs)
        intent = query.intent if self.oracle_intent else None
        if self.kwargs_for is not None:
            from maguyva.query.intent import classify

            kwargs.update(self.kwargs_for(intent or classify(query.query).intent))
        text = query.query
        pattern = _regex_of(text)
        if pattern is not None:  # `/.../` as the CLI reads it: searched as a regex
            text, kwargs["regex"] = pattern, True
        self.last = self.engine.search(text, limit=limit, intent=intent, **kwargs)
        return ranked_from(self.last)

    def search(self, query: str, limit: int) -> list[Ranked]:
        self.last = self.engine.search(query, limit=limit, **self.kwargs)
        return ranked_from(self.last)


def _regex_of(query: str) -> str | None:
    """The pattern of a `/regex/` query (as `maguyva search` parses it), else None."""
    text = query.strip()
    if len(text) > 2 and text.startswith("/") and text.endswith("/") and "\n" not in text:
        from maguyva.query.syntax import parse

        try:
            return parse(text).regex
        except MaguyvaError:
            return None
    return None


def engine_systems(
    engine: Engine, wanted: Sequence[str] | None = None, oracle_intent: bool = False
) -> tuple[list[EngineSystem], dict[str, str]]:
    """Every engine configuration to compare, and the unavailable ones with their reasons."""
    available = set(engine.available_modalities())
    unavailable: dict[str, str] = {}
    systems: list[EngineSystem] = []
    for modality in MODALITIES:
        name = f"{modality}-only"
        if wanted and name not in wanted:
            continue
        if modality not in available:
            unavailable[name] = _reason(engine, modality)
            continue
        systems.append(EngineSystem(name, engine, {"modalities": [modality]},
                                    oracle_intent=oracle_intent))  # fmt: skip
    for preset in PRESET_NAMES:
        name = f"preset:{preset}"
        if wanted and name not in wanted:
            continue
        if preset == "quick" and "semantic" not in available:
            unavailable[name] = "needs semantic: " + _reason(engine, "semantic")
            continue
        systems.append(EngineSystem(name, engine, {"preset": preset}, oracle_intent=oracle_intent))
    return systems, unavailable


def _reason(engine: Engine, modality: str) -> str:
    try:
        engine.searcher(modality)
    except Exception as exc:  # the engine's own explanation, whatever its type
        return str(exc) or type(exc).__name__
    return "available"
