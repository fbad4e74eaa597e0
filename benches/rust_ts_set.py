"""Write a Rust or TypeScript query set for `maguyva eval` (issue 22): four intents, ground
truth from tools nobody here wrote.

    python benches/rust_ts_set.py ROOT CORPUS LANG OUT.jsonl [PER_KIND] [SEED]
    python benches/rust_ts_set.py --add-copies ROOT LANG SET.jsonl

LANG is a Universal Ctags language (`Rust`, `TypeScript`). Per kind, PER_KIND (default 16)
queries, half of each intent held out (`balanced`):

- definitions: ctags items (not `impl` blocks, fields or variants) whose name is defined at
  most twice; every definition of the name is an answer; the wording rotates;
- references and impact: a uniquely defined name used on 1-40 lines; the answer lines are
  `rg -n -w` outside imports, comments and the definition (`spans_mrr.answers`); different
  names for the two intents;
- similar code: a function of 6-40 lines with its name, parameters and `let`/`const`
  bindings renamed `f`, `v0`, `v1`, ... (word-wise; fields after `.` kept); the answer is
  the original.

Tests (`tests/`, `__tests__/`, `*.test.ts`, `*_test.rs`) are never drawn from.
Natural-language questions are written by hand in a separate file.
"""

from __future__ import annotations

import hashlib
import random
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

from spans_mrr import answers

from maguyva.eval.ctags import Tag
from maguyva.eval.queryset import Query, Span, load_queries, write_queries

DEF_KINDS = {
    "Rust": {"struct", "enum", "interface", "function", "method", "typedef", "macro"},
    "TypeScript": {"class", "interface", "function", "method", "alias", "enum"},
}
DECLARED = {"struct", "enum", "interface", "function", "method", "typedef", "class", "alias"}
SKIP_COUNT = {"implementation", "field", "enumerator", "property", "local", "parameter"}
KEYWORD = {
    "Rust": {"struct": "struct", "enum": "enum", "interface": "trait", "function": "fn",
             "method": "fn", "typedef": "type", "macro": "macro_rules!"},
    "TypeScript": {"class": "class", "interface": "interface", "function": "function",
                   "method": "method", "alias": "type", "enum": "enum"},
}  # fmt: skip
CODE_SHAPE = re.compile(r"^[A-Za-z$][\w$]*(_|[a-z0-9][A-Z])[\w$]*$")
STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])\'|`[^`]*`|//.*$')
DEF_TEMPLATES = ("where is {name} defined", "{kw} {name}", "{name}", "definition of {name}")
CALL_TEMPLATES = ("who calls {name}", "callers of {name}")
REF_TEMPLATES = ("usages of {name}", "where is {name} used", "references to {name}",
                 "find all uses of {name}")  # fmt: skip
IMPACT_TEMPLATES = ("what is affected if {name} changes", "impact of renaming {name}",
                    "what breaks if I change {name}", "what depends on {name}")  # fmt: skip
RUST_BINDING = re.compile(r"\blet\s+(?:mut\s+)?([a-z_][a-z0-9_]*)\b")
TS_BINDING = re.compile(r"\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\b")
PARAM = re.compile(r"(?:^|[(,])\s*(?:mut\s+)?([A-Za-z_$][\w$]*)\??\s*:")


def all_tags(root: Path, language: str) -> list[Tag]:
    import json
    import subprocess

    proc = subprocess.run(
        ["ctags", "--output-format=json", "--fields=+nKeZ", "-R", "--sort=no",
         f"--languages={language}", *(["--map-TypeScript=+.tsx"] if language == "TypeScript"
                                      else []), "-f", "-", "."],
        cwd=root, capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    out = []
    texts: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        raw = json.loads(line)
        if raw.get("_type") == "tag":
            path = raw["path"].removeprefix("./")
            if path not in texts:
                texts[path] = (root / path).read_text(errors="replace").splitlines()
            line = int(raw["line"])
            end = int(raw["end"]) if "end" in raw else block_end(texts[path], line)
            if raw["kind"] in DECLARED and not declares(texts[path][line - 1], raw["name"]):
                continue  # this ctags reads `x instanceof ZodLiteral` as a type alias
            out.append(Tag(raw["name"], path, line, end, raw["kind"], raw.get("scope", "")))
    return out


def declares(text: str, name: str) -> bool:
    """Whether the line declares `name` (a keyword before it, or a method's head)."""
    word = re.escape(name)
    keyword = rf"\b(fn|struct|enum|trait|type|class|interface|function|macro_rules!)\s+{word}\b"
    method = rf"^\s*((pub(\([\w:]+\))?|public|private|protected|static|async|const|unsafe|get|set|override|readonly|abstract|extern\s+\"C\")\s+)*{word}\s*[(<]"
    return bool(re.search(keyword, text) or re.search(method, text))


def block_end(lines: list[str], line: int) -> int:
    """The line that closes the item starting at `line` (1-based): the first later line at
    the same indentation that starts with `}` (formatted code), or the line ending in `;`
    when that comes before any `{`. This ctags gives no end line for Rust or TypeScript,
    and counting braces is fooled by TypeScript's `{ ... }` types in signatures."""
    head = lines[line - 1]
    indent = head[: len(head) - len(head.lstrip())]
    opened = False
    for n in range(line - 1, min(len(lines), line + 3000)):
        text = STRING.sub("", lines[n]).rstrip()
        if n > line - 1 and text.startswith(indent + "}") and opened:
            return n + 1
        opened = opened or "{" in text
        if not opened and text.endswith(";"):
            return n + 1
        if n == line - 1 and text.endswith("}") and text.count("{") == text.count("}") > 0:
            return n + 1
    return line


def is_test(path: str) -> bool:
    parts = path.split("/")
    name = parts[-1]
    return (
        any(p in ("tests", "test", "__tests__", "benches", "benchmarks") for p in parts[:-1])
        or ".test." in name
        or name.endswith("_test.rs")
        or name.startswith("test")
    )


def eligible(tags: list[Tag], language: str) -> tuple[list[Tag], Counter[str]]:
    counts = Counter(t.name for t in tags if t.kind not in SKIP_COUNT)
    pool = [t for t in tags if t.kind in DEF_KINDS[language] and not is_test(t.path)
            and CODE_SHAPE.match(t.name) and not t.name.startswith(("test", "_"))
            and not {"tests", "test", "benchmarks"} & set(re.split(r"[.:]+", t.scope))]  # fmt: skip
    return pool, counts


def definitions(tags: list[Tag], language: str, rng: random.Random, n: int, prefix: str):
    pool, counts = eligible(tags, language)
    pool = [t for t in pool if counts[t.name] <= 2]
    rng.shuffle(pool)
    seen: set[str] = set()
    out: list[Query] = []
    for tag in pool:
        if len(out) >= n or tag.name in seen:
            continue
        seen.add(tag.name)
        spans = tuple(Span(t.path, t.line, t.end, t.qualified) for t in tags
                      if t.name == tag.name and t.kind not in SKIP_COUNT)  # fmt: skip
        text = DEF_TEMPLATES[len(out) % 4].format(name=tag.name, kw=KEYWORD[language][tag.kind])
        qid = f"{prefix}-def-{tag.name}"
        out.append(Query(qid, text, "find_definition", spans, "tune", "ctags"))
    return out


def usages(root: Path, tags: list[Tag], language: str, rng: random.Random, n: int,
           prefix: str, used: set[str]):  # fmt: skip
    """Reference questions, then impact questions on other names."""
    pool, counts = eligible(tags, language)
    pool = [t for t in pool if counts[t.name] == 1 and t.kind != "macro"]
    rng.shuffle(pool)
    out: dict[str, list[Query]] = {"find_references": [], "impact_analysis": []}
    for tag in pool:
        intent = "find_references" if len(out["find_references"]) < n else "impact_analysis"
        if len(out[intent]) >= n:
            break
        if tag.name in used:
            continue
        found = {p: ls for p, ls in answers(root, tag.name).items() if not is_test(p)}
        lines = [(p, x) for p, ls in found.items() for x in ls]
        if not 1 <= len(lines) <= 40:
            continue
        used.add(tag.name)
        templates = IMPACT_TEMPLATES
        if intent == "find_references":
            callable_ = tag.kind in ("function", "method")
            templates = CALL_TEMPLATES if callable_ else REF_TEMPLATES
        text = templates[len(out[intent]) % len(templates)].format(name=tag.name)
        qid = f"{prefix}-{intent[:3] if intent != 'find_references' else 'ref'}-{tag.name}"
        spans = tuple(Span(p, x, x) for p, x in lines)
        out[intent].append(Query(qid, text, intent, spans, "tune", "rg"))
    return out["find_references"] + out["impact_analysis"]


def signature(text: str) -> str:
    """The parameter list of the function's first line(s): from the first `(` to its match."""
    start = text.find("(")
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start + 1 : i]
    return ""


def rename(text: str, name: str, language: str) -> str | None:
    """The function with its own name, parameters and local bindings renamed v0, v1, ..."""
    binding = RUST_BINDING if language == "Rust" else TS_BINDING
    names = [m.group(1) for m in PARAM.finditer(signature(text))]
    names += [m.group(1) for m in binding.finditer(text)]
    names = [x for x in dict.fromkeys(names) if x not in ("self", "this", "_") and len(x) > 1]
    if not names:
        return None
    text = re.sub(rf"(?<![\w.$]){re.escape(name)}(?![\w$])", "f", text, count=1)
    for i, local in enumerate(names):
        text = re.sub(rf"(?<![\w.$]){re.escape(local)}(?![\w$])", f"v{i}", text)
    return text


def similar(root: Path, tags: list[Tag], language: str, rng: random.Random, n: int,
            prefix: str):  # fmt: skip
    pool = [t for t in tags if t.kind in ("function", "method") and not is_test(t.path)
            and 6 <= t.end - t.line + 1 <= 40 and len(t.name) >= 4]  # fmt: skip
    rng.shuffle(pool)
    out: list[Query] = []
    seen: set[str] = set()
    for tag in pool:
        if len(out) >= n or tag.qualified in seen:
            continue
        seen.add(tag.qualified)
        lines = (root / tag.path).read_text(errors="replace").splitlines()
        renamed = rename("\n".join(lines[tag.line - 1 : tag.end]), tag.name, language)
        if renamed is None:
            continue
        qid = f"{prefix}-sim-{tag.path.replace('/', '_')}-{tag.line}"
        spans = (Span(tag.path, tag.line, tag.end, tag.qualified),)
        spans += identical_copies(root, tags, language, renamed, spans[0])
        out.append(Query(qid, renamed, "find_similar", spans, "tune", "renamed"))
    return out


def identical_copies(root: Path, tags: list[Tag], language: str, renamed: str,
                     original: Span) -> tuple[Span, ...]:  # fmt: skip
    """Other functions that rename to the very same snippet: a crate that has a function
    twice, token for token (rustls's `crypto/ring` and `crypto/aws_lc_rs` providers), has two
    right answers to "find code like this", and no ranking can tell them apart."""
    found = []
    texts: dict[str, list[str]] = {}
    for tag in tags:
        if tag.kind not in ("function", "method") or is_test(tag.path):
            continue
        if (tag.path, tag.line) == (original.path, original.start):
            continue
        lines = texts.setdefault(
            tag.path, (root / tag.path).read_text(errors="replace").splitlines()
        )
        if rename("\n".join(lines[tag.line - 1 : tag.end]), tag.name, language) == renamed:
            found.append(Span(tag.path, tag.line, tag.end, tag.qualified))
    return tuple(found)


def add_copies(root: Path, language: str, path: Path) -> None:
    """Give the find_similar queries of an existing set their identical copies as answers
    too (`identical_copies`); the other queries are written back unchanged."""
    tags = all_tags(root, language)
    queries = load_queries([path])
    out = []
    for q in queries:
        if q.intent == "find_similar":
            extra = identical_copies(root, tags, language, q.query, q.relevant[0])
            known = {(s.path, s.start) for s in q.relevant}
            q = replace(q, relevant=q.relevant + tuple(s for s in extra
                                                       if (s.path, s.start) not in known))  # fmt: skip
        out.append(q)
    write_queries(path, out)
    print(
        f"{path}: {sum(len(q.relevant) > 1 for q in out if q.intent == 'find_similar')} "
        "find_similar queries have identical copies"
    )


def balanced(queries: list[Query]) -> list[Query]:
    """Half of each intent held out: the queries of an intent in sha256(id) order, every
    other one (`split_for` alone can leave 4 of 16 held out)."""
    out = []
    for intent in dict.fromkeys(q.intent for q in queries):
        group = sorted((q for q in queries if q.intent == intent),
                       key=lambda q: hashlib.sha256(q.id.encode()).digest())  # fmt: skip
        out += [replace(q, split="heldout" if i % 2 else "tune") for i, q in enumerate(group)]
    return out


def main(root: Path, corpus: str, language: str, out: Path, per_kind: int, seed: int) -> None:
    rng = random.Random(seed)
    tags = all_tags(root, language)
    defs = definitions(tags, language, rng, per_kind, corpus)
    used = {q.id.removeprefix(f"{corpus}-def-") for q in defs}
    queries = defs + usages(root, tags, language, rng, per_kind, corpus, used)
    queries += similar(root, tags, language, rng, per_kind, corpus)
    write_queries(out, balanced(queries))
    print(f"wrote {len(queries)} queries to {out}: {Counter(q.intent for q in queries)}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--add-copies":  # --add-copies ROOT LANG SET.jsonl
        add_copies(Path(args[1]), args[2], Path(args[3]))
        sys.exit(0)
    main(Path(args[0]), args[1], args[2], Path(args[3]),
         int(args[4]) if len(args) > 4 else 16, int(args[5]) if len(args) > 5 else 0)  # fmt: skip
