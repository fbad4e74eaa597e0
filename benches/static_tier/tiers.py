"""The static tier end to end (issue 17): understand_code and find_similar through the real
engine (classifier, routing, fusion, presentation) with the semantic retriever's vectors
swapped per variant, side by side with BM25-only fusion (semantic not available).

The index is the eval harness's own (`maguyva eval` builds it with all four modalities and the
transformer tier). Every row's embedded text is read back (`texts.embed_text`, checked against
the row's content hash) and embedded again by the static tier; a variant then decides, row by
row, which vector the semantic retriever ranks with:

- `off`: semantic unavailable (what a generation without vectors answers: BM25-only fusion);
- `p=P`: the first P % of the rows in the build's queue order (`priority.rank`, then the
  shortest text) keep their transformer vector;
- `rest=static|none`: the other rows get their static vector, or none (today's partial
  coverage, weighted by share);
- `q=minilm|static|dual|rrf`: the query's vector: MiniLM, static, or MiniLM against
  transformer rows and static against static rows (`dual`: one Hamming list, rescored by each
  row's own query; `rrf`: one list per tier, merged by rank, a static rank weighing `a`);
- `a=A`: a static row counts A in the share that scales semantic's fusion weight (the
  engine's `weight x share`), so a static tier can weigh less than the transformer;
- `rerank=1`: the retriever ranks only the text retriever's candidates (a re-ranker of the
  lexical list, not a retriever of its own).

Run (one corpus per run; both halves are reported apart: choose on `tune`, report
`heldout`; `--pool A.json B.json ...` prints one table of several runs):

    .venv/bin/python benches/static_tier/tiers.py eval/click-8.1.7.nl.jsonl \\
        eval/click-8.1.7.generated.jsonl --split heldout \\
        --variants off "p=100" "p=0,rest=static,q=static" "p=30,rest=static"
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from maguyva.errors import ModalityUnavailable
from maguyva.eval.cli import prepare
from maguyva.eval.queryset import load_queries
from maguyva.eval.runner import run_system
from maguyva.eval.systems import EngineSystem
from maguyva.modalities.semantic.embed import content_hash, static
from maguyva.modalities.semantic.embed.static import StaticProvider
from maguyva.modalities.semantic.priority import rank
from maguyva.modalities.semantic.reader import read_rows
from maguyva.modalities.semantic.search import RESCORE_DEPTH, query_embedding
from maguyva.modalities.semantic.texts import embed_text, head_text
from maguyva.model import Hit
from maguyva.query.engine import Engine

INTENTS = ("understand_code", "find_similar")
RRF_K = 10
"""`q=rrf`: the two tiers' lists merged as weighted RRF with this k (understand_code's own)."""


@dataclass(frozen=True)
class Variant:
    """Which vector each row is ranked with, how the query is embedded, how much it weighs."""

    name: str
    off: bool = False
    share: float = 1.0  # rows keeping their transformer vector, in queue order
    rest: str = "static"  # the others: "static" or "none"
    query: str = "minilm"  # "minilm", "static" or "dual"
    alpha: float = 1.0  # weight of a static row in the share
    rerank: bool = False

    @classmethod
    def parse(cls, spec: str) -> Variant:
        if spec == "off":
            return cls(spec, off=True)
        fields: dict[str, Any] = {}
        for part in spec.split(","):
            key, _, value = part.partition("=")
            if key == "p":
                fields["share"] = float(value) / 100
            elif key == "rest":
                fields["rest"] = value
            elif key == "q":
                fields["query"] = value
            elif key == "a":
                fields["alpha"] = float(value)
            elif key == "rerank":
                fields["rerank"] = value == "1"
            else:
                raise SystemExit(f"unknown variant field {key!r} in {spec!r}")
        return cls(spec, **fields)


class Rows:
    """The built index's rows: ids, what a hit shows, both tiers' codes and floats, and the
    queue order (which rows the transformer reaches first)."""

    def __init__(self, engine: Engine) -> None:
        searcher = engine.searcher("semantic")
        if searcher.centre is not None:
            raise SystemExit("the transformer tier here is centred: not the local MiniLM")
        got = read_rows(searcher.gen_dir / "semantic")  # every segment, in logical order
        self.provider = searcher.provider
        self.ids: list[str] = got["ids"]
        self.info = got["info"]
        self.paths: list[str] = got["paths"]
        width = self.provider.identity.width
        self.codes_t = np.frombuffer(got["codes"], np.uint8).reshape(-1, width)
        self.floats_t = np.frombuffer(got["floats"], np.float16).reshape(len(self.ids), -1)
        self.floats_t = self.floats_t.astype(np.float32)
        hashes = got["hashes"]
        texts, mismatched = [], 0
        identity = self.provider.identity
        for row, key in enumerate(self.ids):
            chunk = searcher.chunks().get(key, self.paths[row])
            full, head = embed_text(chunk, identity), head_text(chunk)
            text = full if content_hash(full) == hashes[row] else head
            mismatched += content_hash(text) != hashes[row]
            texts.append(text)
        self.mismatched = mismatched
        started = time.process_time()
        self.static = StaticProvider()
        emb = self.static.embed(texts, "document")
        self.static_cpu = time.process_time() - started
        self.codes_s, self.floats_s = emb.codes, np.asarray(emb.floats, np.float32)
        self.order = sorted(range(len(texts)), key=lambda r: (
            rank(self.paths[r], self.info[r][2] == "lines"), len(texts[r]), r))  # fmt: skip
        self.row_of = {key: r for r, key in enumerate(self.ids)}


def hamming(qcode: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Hamming distance of one code to every row (numpy; the corpora here are small)."""
    return np.unpackbits(codes ^ qcode[None, :], axis=1).sum(axis=1)


class TierSearcher:
    """The semantic retriever of one variant: the real searcher's ranking (Hamming top
    RESCORE_DEPTH, float rescoring) over the rows the variant gives a vector."""

    modality = "semantic"
    chunk_keys = True

    def __init__(self, rows: Rows, variant: Variant, engine: Engine) -> None:
        self.rows, self.v, self.engine = rows, variant, engine
        n = len(rows.ids)
        transformer = np.zeros(n, bool)
        transformer[rows.order[: round(variant.share * n)]] = True
        self.transformer = transformer
        self.live = transformer | (variant.rest == "static")
        self.codes = np.where(transformer[:, None], rows.codes_t, rows.codes_s)
        self.floats = np.where(transformer[:, None], rows.floats_t, rows.floats_s)
        static_rows = int(self.live.sum() - transformer.sum())
        self.effective = (transformer.sum() + variant.alpha * static_rows) / n

    def coverage(self) -> dict[str, Any]:
        n = len(self.rows.ids)
        return {"chunks": n, "embedded": round(self.effective * n), "head_only": 0,
                "pending": 0, "left": 0, "complete": True, "duplicates": 0}  # fmt: skip

    def coverage_note(self) -> str | None:
        return None

    def _query(self, text: str) -> tuple[np.ndarray, ...]:
        """(code, float) per row tier: the transformer rows' query and the static rows'."""
        m = query_embedding(self.rows.provider, text)
        s = self.rows.static.embed([text], "query")
        tq = (m.codes[0], m.floats[0]) if self.v.query != "static" else (s.codes[0], s.floats[0])
        sq = (m.codes[0], m.floats[0]) if self.v.query == "minilm" else (s.codes[0], s.floats[0])
        return tq[0], tq[1], sq[0], sq[1]

    def _candidates(self, request: Any, k: int) -> np.ndarray:
        if not self.v.rerank:
            return np.flatnonzero(self.live)
        hits = self.engine.keyed_list("text", self.engine.searcher("text").search(request, k))
        rows = {self.rows.row_of[h.key] for h in hits if h.key in self.rows.row_of}
        return np.array(sorted(r for r in rows if self.live[r]), np.int64)

    def _ranked(self, rows: np.ndarray, use_t: np.ndarray, q: tuple[np.ndarray, ...], k: int
                ) -> list[tuple[float, int, int]]:  # fmt: skip
        """(similarity, distance, row) of the best `k` of `rows`: Hamming top RESCORE_DEPTH,
        rescored with floats; `use_t` says per row whether the transformer query applies."""
        tcode, tfloat, scode, sfloat = q
        if not len(rows):
            return []
        dist = np.where(use_t, hamming(tcode, self.codes[rows]), hamming(scode, self.codes[rows]))
        top = np.lexsort((rows, dist))[: max(k, RESCORE_DEPTH)]
        picked = rows[top]
        sims = np.where(use_t[top], self.floats[picked] @ tfloat, self.floats[picked] @ sfloat)
        return sorted(zip(sims.tolist(), dist[top].tolist(), picked.tolist(), strict=True),
                      key=lambda x: (-x[0], x[1], x[2]))[:k]  # fmt: skip

    def search(self, request: Any, k: int) -> list[Hit]:
        text = (request.snippet or request.text or "").strip()
        cand = self._candidates(request, k)
        if not text or k <= 0 or not len(cand):
            return []
        q = self._query(text)
        is_t = self.transformer[cand]
        if self.v.query != "rrf":
            best = self._ranked(cand, is_t, q, k)
        else:  # each tier ranked by its own query, merged by rank (static weighing alpha)
            t = self._ranked(cand[is_t], is_t[is_t], q, k)
            st = self._ranked(cand[~is_t], is_t[~is_t], q, k)
            merged = [(1 / (RRF_K + i), x) for i, x in enumerate(t)]
            merged += [(self.v.alpha / (RRF_K + i), x) for i, x in enumerate(st)]
            merged.sort(key=lambda m: (-m[0], m[1][2]))
            best = [x for _, x in merged[:k]]
        hits = []
        for sim, d, row in best:
            start, end, kind, name = self.rows.info[row]
            hits.append(Hit(path=self.rows.paths[row], start_line=start, end_line=end,
                            key=self.rows.ids[row], symbol=name, kind=kind, score=round(sim, 6),
                            extra={"hamming": d, "similarity": sim}))  # fmt: skip
        return hits


def engine_for(root: Path, index_dir: Path | None, rows: Rows, variant: Variant) -> Engine:
    """A fresh engine on the same index whose semantic retriever is the variant's."""
    engine = Engine.open(root, index_dir)
    if variant.off:
        engine._unavailable["semantic"] = "semantic not built (bench: BM25-only fusion)"
    else:
        engine._searchers["semantic"] = TierSearcher(rows, variant, engine)
    return engine


def scores(report: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for intent in INTENTS:
        agg = report.by_intent.get(intent)
        if agg:
            out[intent] = {"n": agg["queries"], "file_mrr": round(agg["file.mrr@10"], 3),
                           "line_mrr": round(agg["line.mrr@10"], 3)}  # fmt: skip
    return out


def pool(files: list[Path]) -> None:
    """One table from several runs' `--json` files: understand_code file MRR@10 per corpus
    (tune / held-out) and over every held-out question (a mean weighted by questions)."""
    runs = [json.loads(f.read_text()) for f in files]
    names = [Path(r["root"]).name for r in runs]
    print("| variant | " + " | ".join(names) + " | all corpora: tune / held-out |")
    print("|---|" + "---|" * (len(runs) + 1))
    for spec in runs[0]["results"]:
        cells, sums = [], {"tune": [0.0, 0], "heldout": [0.0, 0]}
        for run in runs:
            got = run["results"].get(spec, {})
            parts = []
            for split in ("tune", "heldout"):
                uc = got.get(split, {}).get("understand_code")
                parts.append(f"{uc['file_mrr']:.3f}" if uc else "-")
                if uc:
                    sums[split][0] += uc["file_mrr"] * uc["n"]
                    sums[split][1] += uc["n"]
            cells.append(" / ".join(parts))
        pooled = " / ".join(f"{t / max(n, 1):.3f} ({n})" for t, n in sums.values())
        print(f"| `{spec}` | " + " | ".join(cells) + f" | {pooled} |")


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["--pool"]:
        pool([Path(a) for a in sys.argv[2:]])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("queries", nargs="+", type=Path)
    ap.add_argument(
        "--split",
        default="all",
        choices=("all", "tune", "heldout"),
        help="all: both halves, reported apart",
    )
    ap.add_argument("--root", type=Path, default=None)
    ap.add_argument("--index-dir", type=Path, default=None)
    ap.add_argument("--variants", nargs="+", default=["off", "p=100"])
    ap.add_argument("--json", type=Path, default=None, help="write the figures here")
    ap.add_argument("--table", type=Path, default=None, help="another static table (distill.py)")
    args = ap.parse_args(argv)
    if args.table is not None:
        static.TABLE = args.table  # type: ignore[assignment]
    # sets of one corpus may reuse ids (the generated and the issue-22 similar sets)
    queries = [replace(q, id=f"{path.stem}:{q.id}") for path in args.queries
               for q in load_queries([path])]  # fmt: skip
    queries = [q for q in queries if q.intent in INTENTS]
    ns = argparse.Namespace(root=args.root, index_dir=args.index_dir, reindex=False, modalities=None,
                            quiet=True)  # fmt: skip
    engine = prepare(ns, queries)
    rows = Rows(engine)
    print(f"{engine.root.name}: {len(rows.ids)} rows ({rows.mismatched} texts not matched), "
          f"static tier {rows.static_cpu:.2f} CPU-s, {len(queries)} queries ({args.split})",
          file=sys.stderr)  # fmt: skip
    results = {}
    for spec in args.variants:
        variant = Variant.parse(spec)
        system = EngineSystem(
            spec, engine_for(engine.root, args.index_dir, rows, variant), {"preset": "default"}
        )
        results[spec] = {}
        for split in ("tune", "heldout") if args.split == "all" else (args.split,):
            part = [q for q in queries if q.split == split]
            try:
                results[spec][split] = scores(run_system(system, part, 10))
            except ModalityUnavailable as exc:
                results[spec][split] = {"error": str(exc)}
        print(spec, json.dumps(results[spec]), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"root": str(engine.root), "split": args.split,
                                         "results": results}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
