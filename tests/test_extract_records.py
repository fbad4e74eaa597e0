"""Workers send each file's extraction as the bytes the index stores: those bytes must be the
store's own encoding, decode back to what the extractor produced, and survive the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maguyva.extract import records
from maguyva.extract.cache import ExtractCache
from maguyva.extract.driver import FileResult, encode_row, extract_files, extract_source
from maguyva.model import SourceFile
from maguyva.repo.languages import detect_language
from maguyva.store.extraction import encode_chunks, encode_extraction
from maguyva.support.sealed import dumps_json

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "maguyva"
SAMPLES = {
    "sample.rs": b"/// A doc\npub struct S { a: i32 }\nimpl S {\n    fn f(&self) -> i32 { self.a }\n}\n"
    b"fn g() { let s = S { a: 1 }; s.f(); }\n",
    "sample.ts": b"import { x } from './x';\nexport class A extends B {\n  m(): void { x.y(1); }\n}\n",
    "sample.go": b'package p\n\nimport "fmt"\n\nfunc (r *R) M() { fmt.Println(r) }\n',
}


def _real_files() -> list[tuple[str, str | None, bytes]]:
    files = [(p.name, "python", p.read_bytes()) for p in sorted((PACKAGE / "extract").glob("*.py"))]
    files += [(name, detect_language(name), data) for name, data in SAMPLES.items()]
    files.append(("notes.txt", None, b"plain\ntext\n" * 80))
    return files


@pytest.mark.parametrize(("path", "language", "data"), _real_files())
def test_worker_bytes_are_the_stores_encoding(path: str, language: str | None, data: bytes) -> None:
    result = extract_source(path, language, data)
    chunk_bytes, extraction, _order = result.encoded
    assert chunk_bytes == encode_chunks(result.chunks)
    assert extraction == dumps_json(encode_extraction(result.extraction))
    shipped = FileResult.from_row(encode_row(result))
    assert shipped.extraction == result.extraction
    assert shipped.chunks == result.chunks  # in the chunker's order, not the stored one
    assert shipped.counts == result.counts
    assert (shipped.path, shipped.language, shipped.status) == (path, language, result.status)


def test_chunk_order_is_restored_when_it_differs_from_the_stored_one() -> None:
    result = extract_source("x.py", "python", b"def a():\n    pass\n\n\ndef b():\n    pass\n")
    reversed_chunks = result.chunks[::-1]
    assert len(reversed_chunks) >= 2
    ordered, order = records.chunk_order(reversed_chunks)
    assert order is not None and ordered == result.chunks
    assert records.decode_chunks(records.chunk_bytes(ordered), order) == reversed_chunks


def test_cache_keeps_the_encoded_row(tmp_path: Path) -> None:
    data = (PACKAGE / "extract" / "driver.py").read_bytes()
    result = extract_source("driver.py", "python", data)
    cache = ExtractCache(tmp_path / "cache")
    cache.put("driver.py", data, encode_row(result))
    hit = cache.get("driver.py", data)
    assert hit is not None
    assert hit == encode_row(result)
    assert cache.get("driver.py", data + b"\n") is None  # other content: not this entry
    assert cache.get("other.py", data) is None


def test_an_old_format_cache_entry_is_ignored(tmp_path: Path) -> None:
    data = b"def f():\n    pass\n"
    cache = ExtractCache(tmp_path / "cache")
    result = extract_source("f.py", "python", data)
    cache.put("f.py", data, encode_row(result))
    [entry] = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    from maguyva.support import sealed

    entry.write_bytes(sealed.seal("xcache", json.dumps(["f.py"]).encode(), 1))
    assert cache.get("f.py", data) is None


def test_parallel_results_equal_the_in_process_ones(tmp_path: Path) -> None:
    for n in range(60):  # over IN_PROCESS_BELOW, so that workers run
        (tmp_path / f"m{n}.py").write_text(f"import os\n\nclass C{n}(Base):\n    def f(self):\n"
                                           f"        return os.path.join(self.x, {n})\n")  # fmt: skip
    files = [SourceFile(f"m{n}.py", 90, 0, "python") for n in range(60)]
    parallel = {r.path: r for r in extract_files(tmp_path, files, jobs=2)}
    serial = {r.path: r for r in extract_files(tmp_path, files, jobs=1)}
    assert parallel.keys() == serial.keys() == {f.path for f in files}
    for path, one in serial.items():
        other = parallel[path]
        assert other.extraction == one.extraction and other.chunks == one.chunks
        assert other.encoded == one.encoded
