"""Effective configuration, from six layers (the first that sets a key wins):

1. CLI flags / explicit overrides (`load_config(root, overrides)`)
2. `MAGUYVA_<KEY>` environment variables (`MAGUYVA_MAX_FILE_BYTES=2000000`)
3. `.maguyva.toml` at the repository root
4. `[tool.maguyva]` in the root's `pyproject.toml`
5. the user file `$XDG_CONFIG_HOME/maguyva/config.toml` (default `~/.config/maguyva/`)
6. built-in defaults (`SCHEMA`)

Secrets never come from files: a key that looks like a credential (`*api_key*`, `*token*`,
`*secret*`, `*password*`) in a config file is refused; API keys are read from the environment
by the provider that needs them (`VOYAGE_API_KEY`). `maguyva config --show` prints the result
with the layer each value came from and every secret redacted.

Modules may add keys with `register()`; unknown keys in a file are kept and warned about.

Trust: layers 3 and 4 live inside the repository being indexed, which may be someone else's
code. A key that widens what is read or where code is sent (`Setting.widens`: symlinks,
the embedding provider, size-cap exemptions, paths, endpoints) is taken from them only when
the user says so (`--trust-repo-config`, `MAGUYVA_TRUST_REPO_CONFIG=1`, or the option
`trust_repo_config=True`); otherwise it is ignored with one warning naming the key, the file
and the flag. Narrowing is always honoured (a smaller `max_file_bytes`, an `index_dir` inside
the root).
"""

from __future__ import annotations

import logging
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maguyva.errors import ConfigError

log = logging.getLogger("maguyva.config")

ENV_PREFIX = "MAGUYVA_"
PROJECT_FILE = ".maguyva.toml"
USER_FILE = "config.toml"
SECRET_ENV = ("VOYAGE_API_KEY",)
"""Environment variables that carry secrets: reported as set/unset, never shown."""

_SECRET_KEY = re.compile(r"api[_-]?key|token|secret|password|credential", re.IGNORECASE)
TRUST_ENV = ENV_PREFIX + "TRUST_REPO_CONFIG"
TRUST_OPTION = "trust_repo_config"
REPO_LAYERS = ("project", "pyproject")
"""Config layers read from inside the repository: not trusted to widen (see the docstring)."""
MAX_CONFIG_BYTES = 4 << 20
"""A config file larger than this is refused unread: the biggest pyproject.toml of the top
PyPI projects is tens of KB, and every command parses the file again."""
_WIDENING_NAME = re.compile(r"url|endpoint|host|provider|symlink|allow|(?:^|_)(?:dir|path|file)s?$")
"""Unknown (not yet registered) keys whose name says they are a path, an endpoint or a grant."""
_warned: set[tuple[str, str]] = set()


@dataclass(frozen=True, slots=True)
class Setting:
    """One configuration key: its type ("int", "float", "bool", "str", "list"), default and doc."""

    kind: str
    default: Any
    doc: str
    optional: bool = False  # None is a valid value
    always: bool = True  # present in the effective dict even when None
    widens: bool = False  # widens what is read or where code goes: not from repository files


SCHEMA: dict[str, Setting] = {
    "index_dir": Setting("str", None, "index directory (default <root>/.maguyva)", True),
    "max_file_bytes": Setting("int", 1 << 20, "skip files larger than this"),
    "allow_large": Setting("list", [], "globs exempt from max_file_bytes", widens=True),
    "hard_max_file_bytes": Setting(
        "int", 16 << 20, "source files over max_file_bytes are indexed up to this", widens=True
    ),
    "follow_symlinks": Setting("bool", False, "follow symlinks while walking", widens=True),
    "max_trigrams": Setting("int", None, "skip files with more distinct trigrams", True, False),
    "embedding_provider": Setting("str", "local", "'local' (offline) or 'voyage'", widens=True),
    "semantic_max_chunks": Setting("int", None, "cap on chunks embedded per build", True),
    "embedding_tier": Setting(
        "str", "static", "'static': pending chunks answer by the distilled table meanwhile"
    ),
    "modalities": Setting(
        "list", ["text", "structural", "graph", "semantic"], "modalities to build"
    ),
    "workers": Setting("int", None, "worker threads (default: all cores)", True),
    "jobs": Setting("int", None, "extraction processes (default: all cores)", True, False),
    "structural_budget_s": Setting("float", None, "per-file parse budget", True, False),
    "preset": Setting("str", "default", "search preset: quick, default or thorough"),
    "limit": Setting("int", 10, "number of search results"),
    "color": Setting("str", "auto", "auto, always or never"),
    # Every key a module reads is declared here, not where the module registers it: the
    # environment and `maguyva config` see the whole schema whichever modules were imported.
    "memory": Setting("str", None, "memory budget of a build, e.g. 6G (caps `jobs`)", True, False),
    "graph_follows": Setting("bool", None, "commit a small update before its graph, the graph "
                             "just after (default: on in watch and mcp --watch, off for "
                             "one-shot index runs)", True, True),
    "semantic_follows": Setting("bool", True, "a large one-shot build commits before "
                                "embedding, then embeds in generations of their own (never "
                                "gate); off: one generation, after the embedding"),
    "first_build_stages": Setting("bool", None, "a first build commits text first, then "
                                  "structural, then graph and the semantic plan, a generation "
                                  "each (default: on from 100 files)", True, True),
    "semantic_phases": Setting("str", None, "auto | full | heads-first | heads", True),
    "semantic_time_budget_s": Setting("float", None, "stop embedding after this long", True),
    "embedding_max_length": Setting("int", None, "local model token window", True, False),
    "embedding_threads": Setting("int", None, "local model intra-op threads", True, False),
    "embedding_batch_size": Setting("int", None, "local model texts per batch (default 1)",
                                    True, False),
    "graph_edge_floor": Setting("float", None, "drop call edges below this confidence "
                                "(default 0.1)", True, False),
    "graph_min_confidence": Setting("float", None, "graph answers' minimum edge confidence "
                                    "(default 0.2)", True, False),
    "graph_remember": Setting("bool", None, "keep the graph's build state in memory between "
                              "updates (default true)", True, False),
    "text_zstd_level": Setting("int", None, "zstd level of the stored file content (default 0: LZ4)",
                               True, False),
    "text_merge_ratio": Setting("float", None, "fold update segments past this share of "
                                "documents (default 0.1)", True, False),
    "text_max_segments": Setting("int", None, "trigram update segments kept (default 8)",
                                 True, False),
    "text_merge_min_docs": Setting("int", None, "documents below which update segments are "
                                   "not folded (default 64)", True, False),
}  # fmt: skip
DEFAULTS: dict[str, Any] = {k: s.default for k, s in SCHEMA.items() if s.always}
"""The defaults as a plain dict (kept for callers of the first version of this module)."""


def register(key: str, setting: Setting) -> None:
    """Let a module outside this package declare its own key (type-checked and shown like the
    built-in ones); the package's own keys are all in `SCHEMA`."""
    SCHEMA.setdefault(key, setting)
    if setting.always:
        DEFAULTS.setdefault(key, setting.default)


@dataclass(slots=True)
class EffectiveConfig:
    """The merged values and, for each key, the layer that set it."""

    values: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    """Keys a repository file set and the trust boundary ignored -> that file."""


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "maguyva" / USER_FILE


def _coerce(key: str, value: Any, origin: str) -> Any:
    """Check a file value's type against the schema (unknown keys pass through)."""
    setting = SCHEMA.get(key)
    if setting is None:
        return value
    if value is None and setting.optional:
        return None
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, int | float) and not isinstance(value, bool),
        "bool": isinstance(value, bool),
        "str": isinstance(value, str),
        "list": isinstance(value, list) and all(isinstance(v, str) for v in value),
    }[setting.kind]
    if not ok:
        raise ConfigError(f"{origin}: {key} must be {_kind_name(setting.kind)}, got {value!r}")
    return float(value) if setting.kind == "float" else value


def _kind_name(kind: str) -> str:
    return {"int": "an integer", "float": "a number", "bool": "true or false",
            "str": "a string", "list": "a list of strings"}[kind]  # fmt: skip


def parse_assignment(text: str) -> tuple[str, Any]:
    """`KEY=VALUE` (a command line's `--set`) as the key and its typed value."""
    key, sep, value = text.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or not key:
        raise ConfigError(f"--set expects KEY=VALUE, got {text!r}")
    if key not in SCHEMA:
        raise ConfigError(f"--set: unknown configuration key {key!r} (`maguyva config` lists them)")
    return key, parse_env_value(key, value, name=f"--set {key}")


def parse_env_value(key: str, text: str, name: str | None = None) -> Any:
    """Turn a `MAGUYVA_<KEY>` string (or a `--set` value: `name`) into the key's type."""
    setting = SCHEMA[key]
    name = name or ENV_PREFIX + key.upper()
    if setting.optional and text.strip().lower() in ("", "none", "null"):
        return None
    try:
        if setting.kind == "int":
            return int(text)
        if setting.kind == "float":
            return float(text)
    except ValueError:
        raise ConfigError(f"{name} must be {_kind_name(setting.kind)}, got {text!r}") from None
    if setting.kind == "bool":
        word = text.strip().lower()
        if word in ("1", "true", "yes", "on"):
            return True
        if word in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name} must be true or false, got {text!r}")
    if setting.kind == "list":
        return [v.strip() for v in text.split(",") if v.strip()]
    return text


def _read_toml(path: Path, table: tuple[str, ...] = ()) -> dict[str, Any] | None:
    # `repo/reader.py` is the reader of repository files, but it sits below this module: the
    # same rule here, locally: a FIFO or device `.maguyva.toml` must not hang every command.
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ConfigError(f"{path}: not a regular file; not read")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise ConfigError(f"{path}: not a regular file; not read")
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_CONFIG_BYTES:
                raise ConfigError(f"{path}: {size:,} bytes, too large for a config file "
                                  f"(the limit is {MAX_CONFIG_BYTES:,}); not read")  # fmt: skip
            data = tomllib.loads(fh.read(MAX_CONFIG_BYTES + 1).decode("utf-8"))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 (byte {exc.start})") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ConfigError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None
    for name in table:
        data = data.get(name)
        if data is None:
            return None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: [{'.'.join(table)}] must be a table")
    return data


def _file_layers(root: Path) -> list[tuple[str, Path, dict[str, Any]]]:
    """(label, path, table) for every config file that exists, lowest precedence first."""
    layers = []
    candidates = [
        ("user", user_config_path(), ()),
        ("pyproject", root / "pyproject.toml", ("tool", "maguyva")),
        ("project", root / PROJECT_FILE, ()),
    ]
    for label, path, table in candidates:
        data = _read_toml(path, table)
        if data is not None:
            layers.append((label, path, data))
    return layers


def trusts_repo_config(overrides: dict[str, Any] | None = None) -> bool:
    """Has the user allowed the repository's own config files to widen (flag, env, option)?"""
    if overrides and overrides.get(TRUST_OPTION) is not None:
        return bool(overrides[TRUST_OPTION])
    text = os.environ.get(TRUST_ENV, "").strip().lower()
    return text in ("1", "true", "yes", "on")


def widens(key: str) -> bool:
    """Does `key` widen what is read or where code is sent?"""
    setting = SCHEMA.get(key)
    return setting.widens if setting is not None else bool(_WIDENING_NAME.search(key))


def _untrusted(key: str, value: Any, values: dict[str, Any], root: Path, path: Path) -> bool:
    """Is a repository file's `value` for `key` one it may not set (it would widen)?"""
    if key == "max_file_bytes":  # lowering the cap only narrows
        return not (isinstance(value, int) and value <= values.get(key, value))
    if key == "index_dir":  # inside the root is where the index lives anyway
        if not isinstance(value, str):
            return False
        target = Path(os.path.realpath(path.parent / value))
        return not target.is_relative_to(Path(os.path.realpath(root)))
    return widens(key)


def _refuse_once(key: str, path: Path) -> None:
    if (str(path), key) in _warned:
        return
    _warned.add((str(path), key))
    log.warning(
        "%s sets %r, which a repository's own config may not set (it widens what is read or "
        "where code is sent): ignored; pass --trust-repo-config (or %s=1) to honour it",
        path, key, TRUST_ENV,
    )  # fmt: skip


def effective_config(root: Path, overrides: dict[str, Any] | None = None) -> EffectiveConfig:
    """Merge every layer; see the module docstring for the order."""
    root = Path(root)
    overrides = dict(overrides or {})
    trusted = trusts_repo_config(overrides)
    overrides.pop(TRUST_OPTION, None)
    values = {k: s.default for k, s in SCHEMA.items()}
    sources = {k: "default" for k in SCHEMA}
    files: list[str] = []
    refused: dict[str, str] = {}
    for label, path, data in _file_layers(root):
        files.append(str(path))
        for key, value in data.items():
            if _SECRET_KEY.search(key):
                raise ConfigError(
                    f"{path}: {key}: secrets are not read from config files; "
                    "set them in the environment (e.g. VOYAGE_API_KEY)"
                )
            value = _coerce(key, value, str(path))
            if label in REPO_LAYERS and not trusted and _untrusted(key, value, values, root, path):
                _refuse_once(key, path)
                refused[key] = str(path)
                continue
            if key not in SCHEMA:
                log.warning("%s: unknown configuration key %r (kept)", path, key)
            if key == "index_dir" and isinstance(value, str):
                value = str((path.parent / value).resolve()) if label != "user" else value
            values[key] = value
            sources[key] = f"{label} ({path})"
    for key in SCHEMA:
        text = os.environ.get(ENV_PREFIX + key.upper())
        if text is not None:
            values[key] = parse_env_value(key, text)
            sources[key] = f"env ({ENV_PREFIX}{key.upper()})"
    for key, value in overrides.items():
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if value is not None:
            values[key] = _coerce(key, value, "option")
            sources[key] = "option"
    _validate(values)
    for key, setting in SCHEMA.items():
        if values.get(key) is None and not setting.always:
            values.pop(key, None)
            sources.pop(key, None)
    values["root"] = str(root)
    return EffectiveConfig(values, sources, files, refused)


def _validate(values: dict[str, Any]) -> None:
    if values.get("preset") not in ("quick", "default", "thorough"):
        raise ConfigError(f"preset must be quick, default or thorough, got {values['preset']!r}")
    if values.get("color") not in ("auto", "always", "never"):
        raise ConfigError(f"color must be auto, always or never, got {values['color']!r}")
    limit = values.get("limit")
    if not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"limit must be a positive integer, got {limit!r}")
    if values.get("embedding_tier", "static") not in ("transformer", "static"):
        raise ConfigError(
            f"embedding_tier must be transformer or static, got {values['embedding_tier']!r}"
        )
    unknown = set(values.get("modalities") or []) - {"text", "structural", "graph", "semantic"}
    if unknown:
        raise ConfigError(f"modalities: unknown {', '.join(sorted(unknown))}")


def load_config(root: Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The effective configuration as a plain dict (what the indexer and modalities read)."""
    return effective_config(root, overrides).values


def index_dir_for(root: Path, config: dict[str, Any]) -> Path:
    """Where the index of `root` lives under this configuration."""
    configured = config.get("index_dir")
    return Path(configured) if configured else Path(root) / ".maguyva"


def show(config: EffectiveConfig) -> list[dict[str, Any]]:
    """Rows for `maguyva config --show`: key, value, source; secrets redacted."""
    keys = sorted({*config.values, *SCHEMA})  # unset optional keys too: every key is listed
    rows = [
        {"key": key, "value": config.values.get(key), "source": config.sources.get(key, "default")}
        for key in keys
    ]
    for row in rows:
        if row["key"] in config.refused:
            row["source"] += f"; ignored from {config.refused[row['key']]} (--trust-repo-config)"
    for name in SECRET_ENV:
        state = "set (redacted)" if os.environ.get(name) else "not set"
        rows.append({"key": name, "value": state, "source": "env"})
    return rows
