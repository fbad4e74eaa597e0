"""Which module each file belongs to, and which module an import statement names.

A *unit* is what an import can name: a Python module or package, a JS/TS module, a Go package
(a directory), a Rust module, a Java/C# type's file, a C/C++ header with its source. Keys carry
a language-family prefix (`py:json.decoder`, `go:pkg/util`, `rs:src::net::http`) so that two
families never collide.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

FAMILY: dict[str, str] = {
    "python": "py",
    "javascript": "js",
    "typescript": "js",
    "tsx": "js",
    "go": "go",
    "rust": "rs",
    "java": "jvm",
    "kotlin": "jvm",
    "scala": "jvm",
    "csharp": "cs",
    "c": "c",
    "cpp": "c",
}
JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".d.ts")
PY_SUFFIXES = (".py", ".pyi", ".pyw")


def _strip_ext(path: str) -> str:
    base = posixpath.basename(path)
    if base.endswith(".d.ts"):
        return path[: -len(".d.ts")]
    stem, dot, _ = base.rpartition(".")
    return path[: len(path) - len(base)] + stem if dot else path


def family_of(language: str | None) -> str:
    return FAMILY.get(language or "", "x")


class ModuleIndex:
    """Maps files to units and import specifications to units.

    Built at once from `(path, language)` pairs, or file by file: `add` each file (in path
    order), then `finish` before resolving anything (a unit's key depends on its own file
    only; what an import names depends on every unit)."""

    def __init__(self, files: Sequence[tuple[str, str | None]] = ()) -> None:
        self.paths: list[str] = []
        self.unit_of_file: list[str] = []
        self.units: dict[str, list[int]] = {}
        self._suffix: dict[str, list[str]] = {}  # dotted suffix -> unit keys (py, jvm)
        self._rust_roots: dict[str, str] = {}  # crate name -> src dir
        for path, language in files:
            self.add(path, language)
        if files:
            self.finish()

    def add(self, path: str, language: str | None) -> str:
        """Register the next file; returns its unit key."""
        fid = len(self.paths)
        self.paths.append(path)
        key = self._unit_key(path, language)
        self.unit_of_file.append(key)
        self.units.setdefault(key, []).append(fid)
        return key

    def finish(self) -> None:
        """Index the importable names of every unit (after the last `add`)."""
        self._suffix = {}
        for key in self.units:
            fam, _, name = key.partition(":")
            if fam in ("py", "jvm", "cs") and name:
                parts = name.split(".")
                for i in range(len(parts)):
                    if fam == "py" and i > 0 and self._is_py_package(parts[:i]):
                        continue  # a suffix inside a package is not an importable name
                    self._suffix.setdefault(f"{fam}:" + ".".join(parts[i:]), []).append(key)

    # -- naming ---------------------------------------------------------------------------

    def _unit_key(self, path: str, language: str | None) -> str:
        fam = family_of(language)
        if fam == "py":
            return "py:" + ".".join(python_module_parts(path))
        if fam == "go":
            return "go:" + posixpath.dirname(path)
        if fam == "rs":
            src, mods = rust_module_path(path)
            crate = posixpath.basename(posixpath.dirname(src) if src else "") or "crate"
            self._rust_roots.setdefault(crate.replace("-", "_"), src)
            return f"rs:{src}::" + "::".join(mods)
        if fam in ("jvm", "cs"):
            return f"{fam}:" + _strip_ext(path).replace("/", ".")
        return f"{fam}:" + _strip_ext(path)

    def _is_py_package(self, parts: list[str]) -> bool:
        return ("py:" + ".".join(parts)) in self.units and any(
            self.paths[f].endswith(("__init__.py", "__init__.pyi"))
            for f in self.units["py:" + ".".join(parts)]
        )

    def child(self, unit: str, name: str) -> str | None:
        """The submodule `name` of `unit` (`py:json` + `decoder` -> `py:json.decoder`)."""
        fam = unit.split(":", 1)[0]
        sep = "::" if fam == "rs" else ("/" if fam in ("go", "js", "c", "x") else ".")
        key = unit + name if fam == "rs" and unit.endswith("::") else unit + sep + name
        return key if key in self.units else None

    # -- resolution -----------------------------------------------------------------------

    def resolve(self, fid: int, module: str, level: int = 0) -> tuple[str | None, list[str]]:
        """Resolve an import's module specification from file `fid`: the unit it names (None
        when it is not in the repository) and the trailing segments that name an item inside
        that unit (Java `a.b.C.method`, Rust `crate::a::f`)."""
        fam = self.unit_of_file[fid].split(":", 1)[0]
        if fam == "py":
            return self._resolve_py(fid, module, level), []
        if fam == "js":
            return self._resolve_js(fid, module), []
        if fam == "go":
            return self._resolve_go(module), []
        if fam == "rs":
            return self._resolve_rust(fid, module)
        if fam in ("jvm", "cs"):
            return self._resolve_dotted(fam, module)
        if fam == "c":
            return self._resolve_include(fid, module), []
        return None, []

    def _best(self, fid: int, keys: list[str]) -> str:
        here = self.paths[fid]

        def score(key: str) -> tuple[int, int]:
            path = self.paths[self.units[key][0]]
            common = len(posixpath.commonprefix([here, path]).split("/"))
            return (len(key), -common)

        return min(keys, key=score)

    def _resolve_py(self, fid: int, module: str, level: int) -> str | None:
        if level == 0 and module.startswith("."):
            stripped = module.lstrip(".")
            level, module = len(module) - len(stripped), stripped
        if level > 0:
            parts = python_module_parts(self.paths[fid])
            if not self.paths[fid].endswith(("__init__.py", "__init__.pyi")):
                parts = parts[:-1]
            if level - 1 > len(parts):
                return None
            base = parts[: len(parts) - (level - 1)]
            key = "py:" + ".".join(base + (module.split(".") if module else []))
            return key if key in self.units else None
        if f"py:{module}" in self.units:
            return f"py:{module}"
        keys = self._suffix.get(f"py:{module}")
        return self._best(fid, keys) if keys else None

    def _resolve_js(self, fid: int, spec: str) -> str | None:
        spec = spec.strip("'\"`")
        if spec.startswith("."):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(self.paths[fid]), spec))
        elif spec.startswith(("/", "@/", "~/")):
            target = spec.split("/", 1)[1] if not spec.startswith("/") else spec[1:]
        else:
            target = spec  # a bare specifier is a package unless a root-relative path exists
        for cand in (_strip_ext(target), target, target + "/index"):
            if f"js:{cand}" in self.units:
                return f"js:{cand}"
            if not spec.startswith(".") and f"js:src/{cand}" in self.units:
                return f"js:src/{cand}"
        return None

    def _resolve_go(self, spec: str) -> str | None:
        segs = spec.strip('"').split("/")
        for i in range(len(segs)):
            key = "go:" + "/".join(segs[i:])
            if key in self.units:
                return key
        return None

    def _resolve_rust(self, fid: int, spec: str) -> tuple[str | None, list[str]]:
        segs = [s for s in spec.replace(".", "::").split("::") if s]
        key = self.unit_of_file[fid]
        src, _, mods = key[3:].partition("::")
        here = [m for m in mods.split("::") if m]
        if not segs:
            return None, []
        if segs[0] == "crate":
            base, segs = [], segs[1:]
        elif segs[0] in ("self", "super"):
            base = list(here)
            while segs and segs[0] in ("self", "super"):
                if segs.pop(0) == "super" and base:
                    base.pop()
        elif segs[0] in self._rust_roots and segs[0] != "std":
            src, base, segs = self._rust_roots[segs[0]], [], segs[1:]
        else:
            child = f"rs:{src}::" + "::".join([*here, segs[0]])
            root = f"rs:{src}::{segs[0]}"
            if child in self.units:
                base = list(here)
            elif root in self.units:
                base = []
            else:
                return None, segs
        # the longest path that names a file's module: a module declared inline (`pub mod
        # client { mod hs; }` in lib.rs) has no file of its own, only its children do
        for cut in range(len(segs), -1, -1):
            unit = f"rs:{src}::" + "::".join([*base, *segs[:cut]])
            if unit in self.units:
                return unit, segs[cut:]
        return None, segs

    def _resolve_dotted(self, fam: str, spec: str) -> tuple[str | None, list[str]]:
        parts = spec.split(".")
        for cut in range(len(parts), 0, -1):
            keys = self._suffix.get(f"{fam}:" + ".".join(parts[:cut]))
            if keys:
                return min(keys, key=len), parts[cut:]
        return None, []

    def _resolve_include(self, fid: int, spec: str) -> str | None:
        spec = spec.strip("<>\"'")
        here = posixpath.dirname(self.paths[fid])
        direct = _strip_ext(posixpath.normpath(posixpath.join(here, spec)))
        if f"c:{direct}" in self.units:
            return f"c:{direct}"
        want = "/" + _strip_ext(spec)
        hits = [k for k in self.units if k.startswith("c:") and ("/" + k[2:]).endswith(want)]
        return min(hits, key=len) if hits else None


def python_module_parts(path: str) -> list[str]:
    """`pkg/sub/mod.py` -> [pkg, sub, mod]; `pkg/__init__.py` -> [pkg]."""
    stem = path
    for suffix in PY_SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    parts = stem.split("/")
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return parts


def rust_module_path(path: str) -> tuple[str, list[str]]:
    """The crate source directory of a Rust file and its module path inside the crate."""
    parts = path.split("/")
    i = len(parts) - 2 - parts[:-1][::-1].index("src") if "src" in parts[:-1] else -1
    src = "/".join(parts[: i + 1]) if i >= 0 else ""
    mods = parts[i + 1 :]
    last = _strip_ext(mods[-1])
    mods = [*mods[:-1], last]
    if mods and mods[-1] == "mod":
        mods = mods[:-1]
    if len(mods) == 1 and mods[0] in ("lib", "main") and i >= 0:
        mods = []
    return src, mods
