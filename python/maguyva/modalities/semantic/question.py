"""What a question in words is embedded as: its content, without the interrogative lead.

"how does the server choose a certificate ..." is embedded as "server choose a certificate
...": chunks are code, doc comments and signatures, and none of them opens with "how does
the", so the lead only pulls the query vector toward the phrasing of questions (measured on
understand_code in docs/eval-rust-ts.md)."""

from __future__ import annotations

import re

from maguyva.support.lazyre import lazy_compile

_LEAD = lazy_compile(
    r"^\s*(?:how\s+(?:does|do|is|are|can)|what\s+(?:does|do|is|are|happens\s+when)|"
    r"where\s+(?:does|do|is|are)|why\s+(?:does|do|is|are)|explain)\s+(?:(?:the|a|an)\s+)?",
    re.IGNORECASE,
)
MIN_WORDS = 2
"""A content shorter than this ("explain it" -> "it") keeps the whole question."""


def question_content(text: str) -> str:
    """`text` without its interrogative lead ("how does the", "what happens when",
    "explain"), or `text` itself when there is no lead or too little would be left."""
    content = _LEAD.sub("", text, count=1).strip()
    if content == text.strip() or len(content.split()) < MIN_WORDS:
        return text
    return content
