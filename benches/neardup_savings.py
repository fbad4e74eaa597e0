"""How many embeddings near-duplicate chunks would save, level by level (issue 17).

The build's own extraction and texts (`texts.embed_text`, `texts.head_text`) of a source tree;
each level keys a text's vector by a normalised form and counts the distinct keys: full texts,
heads that are not their whole chunk, and both together (what heads-first embeds). Levels are
cumulative from "whitespace" on; "heads seen as bodies" is what ships (`dedup`: exact keys, a
head that fills the window takes its text's), "tokens" keys every text by the truncated ids
the local model sees (lossless), the ones after it change what the model sees (not shipped):

    .venv/bin/python benches/neardup_savings.py /tmp/nd-corp/django-5.2.8 [--dump /tmp/dj.pkl]

`--dump` keeps the planned texts so a second run skips the extraction (`--load`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import keyword
import pickle
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from maguyva.modalities.semantic.dedup import heads_seen_as_bodies, tokenizer
from maguyva.modalities.semantic.embed import MiniLMProvider, content_hash

Texts = list[tuple[str, str, str, str]]  # header, body, full text, head (head is text: same)

_NUMBER = re.compile(r"(?<![\w.])(?:0[xob][\da-f_]+|\d[\d_]*(?:\.\d*)?(?:e[+-]?\d+)?j?)", re.I)
_STRING = re.compile(
    r"(?P<q>'''|\"\"\")(?:[^\\]|\\.)*?(?P=q)"  # triple-quoted, lazily
    r"|(?P<s>['\"])(?:[^'\"\\\n]|\\.)*(?P=s)",  # one line
    re.S,
)
_COMMENT = re.compile(r"(?m)(?:#|//)[^\n]*$")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
CUT = 1024  # `embed_text` keeps this many characters (128 tokens x 8)
_KEEP = frozenset(keyword.kwlist) | {"self", "cls", "None", "True", "False"}


IDENTITY = MiniLMProvider().identity


def load(root: Path) -> Texts:
    from maguyva.config import effective_config
    from maguyva.modalities.semantic.texts import embed_text, head_text
    from maguyva.modalities.structural.modality import extract_repository
    from maguyva.repo.walk import walk_repository

    values = effective_config(root, {}).values
    files = walk_repository(root, values).files
    _, chunks, _ = extract_repository(root, files, values, lambda phase, done, total: None)
    identity = MiniLMProvider().identity
    out: Texts = []
    for c in chunks:
        text, head = embed_text(c, identity), head_text(c)
        out.append((c.header, c.text, text, text if len(head) >= len(text) else head))
    return out


def _literals(body: str) -> str:
    return _NUMBER.sub("0", _STRING.sub(lambda m: (m["q"] or m["s"]) * 2, body))


def _idents(body: str) -> str:
    return _IDENT.sub(lambda m: m[0] if m[0] in _KEEP else "v", body)


def _header_no_path(header: str) -> str:
    first, _, rest = header.partition("\n")
    _, _, what = first.partition(": ")
    what = what or re.sub(r"^.*:(\d+-\d+)$", "lines", first)
    return f"{what}\n{rest}" if rest else what


# each level: how a (header, body) pair is rewritten before tokenising (None: no rewrite)
LEVELS: list[tuple[str, Callable[[str, str], tuple[str, str]] | None]] = [
    ("literals", lambda h, b: (h, _literals(b))),
    ("literals+comments", lambda h, b: (h, _COMMENT.sub("", _literals(b)))),
    ("literals+comments+path", lambda h, b: (_header_no_path(h), _COMMENT.sub("", _literals(b)))),
    ("identifiers (+all above)",
     lambda h, b: (_header_no_path(h), _idents(_COMMENT.sub("", _literals(b))))),
]  # fmt: skip


def _head_of(header: str, body: str, head_chars: int = 200) -> str:
    taken, size = [], 0
    for line in body.split("\n"):
        if taken and size + len(line) + 1 > head_chars:
            break
        taken.append(line[:head_chars])
        size += len(line) + 1
    joined = "\n".join(taken)
    return f"{header}\n{joined}" if header else joined


def _count(full: list[str], heads: list[str | None]) -> dict[str, int]:
    fulls = set(full)
    separate = [h for h in heads if h is not None]
    head_keys = set(separate) - fulls
    return {"full": len(fulls), "heads": len(head_keys), "both": len(fulls | head_keys),
            "heads_total": len(separate)}  # fmt: skip


def token_key(ids: list[int]) -> str:
    return hashlib.sha256(b"ids\0" + np.asarray(ids, dtype=np.uint32).tobytes()).hexdigest()


def _tokens(texts: list[str]) -> list[str]:
    tok = tokenizer(MiniLMProvider().identity.max_tokens or 128)
    out: list[str] = []
    for start in range(0, len(texts), 1024):
        out += [token_key(e.ids) for e in tok.encode_batch(texts[start : start + 1024])]
    return out


def measure(texts: Texts) -> list[dict[str, object]]:
    separate = [i for i, t in enumerate(texts) if t[3] is not t[2] and t[3] != t[2]]
    rows: list[dict[str, object]] = []

    def row(name: str, full: list[str], heads: dict[int, str]) -> None:
        got = _count(full, [heads.get(i) for i in range(len(texts))])
        rows.append({"level": name, **got})
        print(json.dumps(rows[-1]), flush=True)

    row("exact", [content_hash(t[2]) for t in texts],
        {i: content_hash(texts[i][3]) for i in separate})  # fmt: skip
    t0 = time.process_time()
    seen = heads_seen_as_bodies([(texts[i][2], texts[i][3]) for i in separate], IDENTITY)
    cpu = time.process_time() - t0
    exact = [content_hash(t[2]) for t in texts]
    row("heads seen as bodies (shipped)", exact,
        {i: exact[i] if same else content_hash(texts[i][3])
         for i, same in zip(separate, seen, strict=True)})  # fmt: skip
    print(json.dumps({"heads_check_cpu_s": round(cpu, 2), "heads": len(separate)}), flush=True)
    ws = [" ".join(t[2].split()) for t in texts]
    row("whitespace", ws, {i: " ".join(texts[i][3].split()) for i in separate})
    t0 = time.process_time()
    keys = _tokens([t[2] for t in texts] + [texts[i][3] for i in separate])
    cpu = time.process_time() - t0
    row(
        "tokens (shipped)", keys[: len(texts)], dict(zip(separate, keys[len(texts) :], strict=True))
    )
    print(json.dumps({"token_keys_cpu_s": round(cpu, 2), "texts": len(keys)}), flush=True)
    for name, rewrite in LEVELS:
        assert rewrite is not None
        pairs = [rewrite(t[0], t[1][:CUT]) for t in texts]
        full = [f"{h}\n{b}" if h else b for h, b in pairs]
        heads = [_head_of(h, b) for h, b in pairs]
        keys = _tokens(full + [heads[i] for i in separate])
        row(name, keys[: len(texts)], dict(zip(separate, keys[len(texts) :], strict=True)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, nargs="?")
    ap.add_argument("--dump", type=Path)
    ap.add_argument("--load", type=Path)
    args = ap.parse_args()
    if args.load:
        texts = pickle.loads(args.load.read_bytes())
    else:
        texts = load(args.root)
        if args.dump:
            args.dump.write_bytes(pickle.dumps(texts))
    print(json.dumps({"chunks": len(texts)}))
    measure(texts)


if __name__ == "__main__":
    main()
