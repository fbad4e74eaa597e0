"""Plain lower-case words as a question's target, where a fixed phrase says they name code.

"callers of send", "where is foo used", "if I move slugify into utils": no token looks like
code, but the phrase around the word leaves no other reading (`intent.py`'s phrase rules).
"""

from __future__ import annotations

import re

from maguyva.modalities.text.stopwords import STOP_WORDS
from maguyva.query.targets import PROSE
from maguyva.support.lazyre import lazy_compile

AT_WORD = r"(?=[a-z])\b"
"""Where a phrase of the classifier's families can start in a shape (lower-cased): every one
opens with a lower-case letter, and testing for one first spares trying each phrase at the end
of every word (the same matches, 15-30 % less time per search)."""


_PLAIN_ANCHOR = lazy_compile(
    r"^(?:(?:find\s+|show\s+)?(?:all\s+)?(?:usages?|uses|references|refs|callers|call\s+sites"
    r"|invocations|definition|blast\s+radius|impact|dependents|consequences|effects?)"
    r"\s+(?:of|to|for|on)(?:\s+(?:changing|renaming|deleting|removing|modifying|editing))?"
    r"|(?:who|what)\s+(?:calls|invokes|uses|references|depends\s+on)|what\s+depends\s+on"
    r"|what\s+(?:breaks|would\s+break)\s+if\s+(?:i|we)\s+(?:change|rename|delete|remove|modify)"
    r"|where\s+is)\s+(?:the\s+)?(?:function\s+|method\s+|class\s+)?(?P<w>[a-z_]\w*)"
    r"(?:\s+(?:used|called|defined|declared|invoked|referenced))?\s*\??$"
)


_PLAIN_CHANGE = lazy_compile(
    AT_WORD
    + r"(?:chang\w*|renam\w*|delet\w*|remov\w*|modif\w*|mov(?:e|es|ed|ing)|drop\w*|refactor\w*"
    r"|rewrit\w*|replac\w*|deprecat\w*|inlin\w*|split\w*|touch\w*|nuk\w*|kill\w*)\s+(?:the\s+)?"
    r"(?:function\s+|method\s+|class\s+|module\s+|helper\s+)?(?P<w>[a-z_]\w*)\b"
)


def word_in(word: str, text: str) -> str:
    """`word` (from the lower-cased shape) as the question spells it."""
    found = re.search(r"\b" + re.escape(word) + r"\b", text, re.IGNORECASE)
    return found.group(0) if found else word


def plain_changed(shape: str, text: str) -> str:
    """A plain-word target right after a verb of change ("if I move slugify into ...")."""
    for match in _PLAIN_CHANGE.finditer(shape):
        word = match.group("w")
        if word in PROSE or word in {"x", "it"}:
            continue
        return word_in(word, text)
    return ""


def plain_target(shape: str, text: str) -> str:
    """A plain-word target in a short, fixed phrase ("callers of send", "where is foo used")."""
    match = _PLAIN_ANCHOR.search(shape)
    if not match or match.group("w") in STOP_WORDS or match.group("w") in {"it", "this", "x"}:
        return ""
    return word_in(match.group("w"), text)
