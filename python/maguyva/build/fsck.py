"""`maguyva fsck` (verify every file of the index, name what is wrong) and
`maguyva index --repair` (make the index sound again with the least work).

What fsck checks, for the current generation (and, as warnings, older ones still on disk):
the manifest's header and checksum; the generation's checksum table (every file present, with
its recorded size and CRC-32, and no stray file); the indexer's own sealed files (chunks, file
state, extraction, build report) parsed through their loaders; and each built modality's own
`verify(directory) -> list[str]` when its `MODALITY` object has one
(`retriever.VerifiableModality`; a module-level `verify` function is accepted too). A modality
without one is checked by the checksums alone; the report says which was used. Leftovers of killed writers are reported as warnings; they are
removed by the next writer or by repair.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maguyva.errors import IndexVersionError, MaguyvaError
from maguyva.modalities.protocol import VerifiableModality
from maguyva.modalities.registry import MODALITY_MODULES
from maguyva.store import blocks
from maguyva.store.checksums import verify_generation
from maguyva.store.chunks import ChunkStore
from maguyva.store.generations import MANIFEST, IndexDir
from maguyva.support import sealed

log = logging.getLogger("maguyva.build.fsck")

OWN_FILES = {"meta.json": ("meta", 1), "files.json": ("files", sealed.PACKED_VERSION),
             "extract.json": ("extract", 1)}  # fmt: skip
"""The indexer's own sealed files: kind and the newest version this Maguyva reads."""


@dataclass(slots=True)
class FsckReport:
    """`errors` make the index unsound (exit 2); `warnings` do not (leftovers, bad old
    generations that are not current)."""

    index_dir: str
    generation: int | None = None
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    checked_files: int = 0
    verified_by: dict[str, str] = field(default_factory=dict)  # modality -> "verify"|"checksums"

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {"index_dir": self.index_dir, "generation": self.generation, "ok": self.ok,
                "errors": self.errors, "warnings": self.warnings,
                "checked_files": self.checked_files, "verified_by": self.verified_by}  # fmt: skip


def modality_verifier(name: str) -> Any:
    """The modality's `verify(dir) -> list[str]`, or None when it has none."""
    module_name = MODALITY_MODULES.get(name)
    if module_name is None:
        return None
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    modality = getattr(module, "MODALITY", None)
    if isinstance(modality, VerifiableModality):
        return modality.verify
    verify = getattr(module, "verify", None)
    return verify if callable(verify) else None


def _unreadable(path: Path, exc: OSError) -> str:
    return f"{path}: unreadable ({exc.strerror or exc})"


def check_generation(
    gen_dir: Path, manifest: dict[str, Any], verified_by: dict[str, str] | None = None
) -> tuple[list[str], int]:
    """Problems of one generation (deep), and how many files were checked. `verified_by`
    receives, per built modality, "verify" or "checksums" (what checked its own files)."""
    problems = _checksum_problems(gen_dir)
    try:
        table = sealed.read_packed_json(gen_dir / "CHECKSUMS", "checksums")
        count = len(table) + 1
    except (MaguyvaError, OSError):
        count = 0
    for name, (kind, version) in OWN_FILES.items():
        path = gen_dir / name
        if path.exists():
            try:
                sealed.read_sealed_json(path, kind, version)
            except MaguyvaError as exc:
                problems.append(str(exc))
            except OSError as exc:
                problems.append(_unreadable(path, exc))
    rows = sorted((gen_dir / "extract").glob("*.json")) + sorted(
        (gen_dir / "delta").glob("*.extract.json")
    )
    for path in rows:
        try:
            blocks.check_file(path, "extract")
        except MaguyvaError as exc:
            problems.append(str(exc))
        except OSError as exc:
            problems.append(_unreadable(path, exc))
    if (gen_dir / "chunks.jsonl").exists() or (gen_dir / "chunks").is_dir():
        try:
            ChunkStore.open(gen_dir)
        except MaguyvaError as exc:
            problems.append(str(exc))
        except OSError as exc:
            problems.append(_unreadable(Path(exc.filename or gen_dir / "chunks"), exc))
    for name, status in sorted(manifest.get("modalities", {}).items()):
        if not status.get("built"):
            continue
        directory = gen_dir / name
        verify = modality_verifier(name)
        if verified_by is not None:
            verified_by[name] = "checksums" if verify is None else "verify"
        if verify is None:
            continue
        try:
            problems.extend(f"{name}: {p}" for p in verify(directory))
        except MaguyvaError as exc:
            problems.append(f"{name}: {exc}")
        except OSError as exc:
            problems.append(f"{name}: {_unreadable(Path(exc.filename or directory), exc)}")
        except Exception as exc:  # a verifier's bug is a finding too, not a crash of fsck
            problems.append(f"{name}: verify failed: {type(exc).__name__}: {exc}")
    return sorted(set(problems)), count


def _checksum_problems(gen_dir: Path, prefix: str = "") -> list[str]:
    """`verify_generation`'s problems, a table written by a newer Maguyva among them (it
    raises that one: a reader must not call it damage)."""
    try:
        return verify_generation(gen_dir, deep=True, prefix=prefix)
    except IndexVersionError as exc:
        return [str(exc)]


def modality_damage(
    gen_dir: Path, manifest: dict[str, Any], verifiers: bool = False
) -> dict[str, str]:
    """Built modalities whose files fail fsck's checks (CRC-32 against CHECKSUMS and, with
    `verifiers`, the modality's own verifier): name -> the first problem (+ how many more).
    What `maguyva status` shows, without the verifiers: the CRCs catch any flipped bit or cut
    file, and the verifiers parse every segment (10x the cost on the standard library)."""
    damaged: dict[str, str] = {}
    for name, status in sorted(manifest.get("modalities", {}).items()):
        if not status.get("built"):
            continue
        problems = _checksum_problems(gen_dir, prefix=f"{name}/")
        verify = modality_verifier(name) if verifiers and not problems else None
        if verify is not None:
            try:
                problems = list(verify(gen_dir / name))
            except MaguyvaError as exc:
                problems = [str(exc)]
            except Exception as exc:  # a verifier's bug is a finding too, not a crash
                problems = [f"verify failed: {type(exc).__name__}: {exc}"]
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            damaged[name] = f"{problems[0]}{more}"
    return damaged


def fsck(index_path: Path) -> FsckReport:
    """Verify the index at `index_path`; never raises for a damaged index (it reports it)."""
    index = IndexDir(index_path)
    report = FsckReport(str(index.path))
    if not index.path.is_dir():
        report.errors.append(f"{index.path}: no index here")
        return report
    for leftover in sorted(index.path.glob("gen-*.tmp-*")) + sorted(
        index.path.glob(f"{MANIFEST}.tmp-*")
    ):
        report.warnings.append(f"{leftover}: leftover of an interrupted run (harmless)")
    try:
        manifest = index.read_manifest()
    except MaguyvaError as exc:
        report.errors.append(str(exc))
        manifest = None
    except OSError as exc:
        report.errors.append(_unreadable(index.path / MANIFEST, exc))
        manifest = None
    current = None
    if manifest is not None:
        current = int(manifest["generation"])
        report.generation = current
        gen_dir = index.path / manifest["dir"]
        if not gen_dir.is_dir():
            report.errors.append(f"{index.path}: manifest names missing generation {gen_dir}")
        else:
            problems, count = check_generation(gen_dir, manifest, report.verified_by)
            report.errors.extend(problems)
            report.checked_files += count
    for number in index.generations():
        if number == current:
            continue
        gen_dir = index.path / f"gen-{number:06d}"
        try:
            meta = sealed.read_sealed_json(gen_dir / "meta.json", "meta")
        except (MaguyvaError, OSError):
            meta = {}
        problems, count = check_generation(gen_dir, meta)
        report.checked_files += count
        report.warnings.extend(f"old generation {number}: {p}" for p in problems)
    return report


def newest_sound_generation(index: IndexDir, below: int | None) -> tuple[int, dict] | None:
    """The newest generation (under `below`) that passes the deep check, with its meta."""
    for number in reversed(index.generations()):
        if below is not None and number >= below:
            continue
        gen_dir = index.path / f"gen-{number:06d}"
        try:
            meta = sealed.read_sealed_json(gen_dir / "meta.json", "meta")
        except (MaguyvaError, OSError):
            continue
        if not check_generation(gen_dir, meta)[0]:
            return number, meta
    return None


def repair(
    root: Path, *, config: dict[str, Any] | None = None, wait_for_lock: bool = False
) -> dict[str, Any]:
    """Make the index sound: drop leftovers, fall back to the newest sound generation when the
    current one is damaged (then update it incrementally), or rebuild from scratch when none
    is sound. Returns what was done and the final fsck report."""
    from maguyva.build.indexer import Indexer

    indexer = Indexer(root, config=config)
    index = indexer.index
    actions: list[str] = []
    before = fsck(index.path)
    rebuild = False
    if not before.ok:
        with index.writer_lock(wait=wait_for_lock):
            actions.extend(f"removed {name}" for name in index.remove_leftovers())
            fallback = newest_sound_generation(index, below=before.generation)
            if fallback is not None:
                number, meta = fallback
                index.point_manifest_at(number, meta)
                (index.path / "scan.json").unlink(missing_ok=True)
                actions.append(f"made sound generation {number} current again")
            else:
                rebuild = True
                actions.append("no sound generation left: rebuilding from scratch")
            if before.generation is not None and (
                fallback is None or fallback[0] != before.generation
            ):
                bad = index.path / f"gen-{before.generation:06d}"
                if bad.is_dir() and index.collect(keep_from=before.generation + 1,
                                                  protect=fallback[0] if fallback else None):  # fmt: skip
                    actions.append(f"deleted damaged generation {before.generation}")
    summary = indexer.update(wait_for_lock=True, rebuild=rebuild)
    if not summary.noop:
        actions.append(f"committed generation {summary.generation}")
    after = fsck(index.path)
    return {"actions": actions, "before": before.to_dict(), "after": after.to_dict()}
