"""The static tier's native WordPiece (`rust/src/wordpiece.rs`): the same ids as the vendored
MiniLM `tokenizers` pipeline on every ASCII character, on generated edge cases and on real
code (standard-library modules cut as the build cuts them), and the same vectors from
`StaticProvider.embed` whichever path a text takes."""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from maguyva.modalities.semantic.embed.static import (
    CHARS_PER_TOKEN,
    StaticProvider,
    load_tokenizer,
    native_tokenizer,
)

STDLIB = Path(sysconfig.get_paths()["stdlib"])
WINDOW = 128
native = native_tokenizer()
pytestmark = pytest.mark.skipif(native is None, reason="native module without StaticTokenizer")


def hf_ids(texts: list[str], window: int = WINDOW) -> list[list[int]]:
    tokenizer = load_tokenizer(window)
    return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def same_ids(texts: list[str], window: int = WINDOW) -> None:
    expected = hf_ids(texts, window)
    for text, ids in zip(texts, expected, strict=True):
        assert native.encode(text, window) == ids, repr(text[:200])


def test_every_ascii_character_alone_and_between_words() -> None:
    chars = [chr(c) for c in range(128)]
    same_ids(chars + [f"ab{c}cd" for c in chars] + [f"{c}{c}x{c}" for c in chars])


def test_special_tokens_long_words_case_and_truncation() -> None:
    texts = ["x[CLS]y", "[cls] [SEP]a[MASK][PAD][UNK]", "[CLS", "a" * 100, "a" * 101,
             "getUserName HTTPServer __init__ x1y2 0x7fff", "zzqxjkvw " * 3,
             "word " * 300, "a.b" * 200, ""]  # fmt: skip
    same_ids(texts)
    same_ids(texts, window=8)


def test_random_ascii_texts() -> None:
    rng = random.Random(7)
    alphabet = "abcXYZ019 _.,()[]{}#\n\t\r\x00\x07\x7f" + "CLSEP"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 400)))
             for _ in range(400)]  # fmt: skip
    same_ids(texts)


def real_texts() -> list[str]:
    """Windows of real modules, cut at the build's limit (`CHARS_PER_TOKEN`)."""
    texts = []
    for name in ("argparse", "tarfile", "email/message", "json/decoder", "http/client"):
        source = (STDLIB / f"{name}.py").read_text(encoding="utf-8")
        lines = source.splitlines()
        for start in range(0, len(lines), 25):
            texts.append("\n".join(lines[start : start + 40])[: WINDOW * CHARS_PER_TOKEN])
    return texts


def test_real_code_gives_the_same_ids() -> None:
    texts = [t for t in real_texts() if t.isascii()]
    assert len(texts) > 300
    same_ids(texts)


def test_the_provider_gives_the_same_vectors_whichever_path_a_text_takes() -> None:
    texts = [*real_texts()[:300], "naïve café résumé", "日本語のテキスト def f(): pass"]
    fast = StaticProvider()
    slow = StaticProvider()
    slow._load()
    slow._native = None  # every text through `tokenizers` and `static_pool`
    a = fast.embed(texts, "document")
    b = slow.embed(texts, "document")
    assert a.tokens == b.tokens > 0
    assert a.floats is not None and b.floats is not None
    np.testing.assert_allclose(a.floats, b.floats, atol=1e-5)
    assert (a.codes == b.codes).mean() > 0.999  # a sign at zero may flip in the last bit


def test_a_text_not_ascii_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not ASCII"):
        native.encode("café", WINDOW)
