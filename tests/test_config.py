"""Configuration layers: flags > MAGUYVA_* > .maguyva.toml > [tool.maguyva] > user > defaults;
secrets refused in files and redacted in `config --show`."""

from __future__ import annotations

from pathlib import Path

import pytest

from maguyva.config import effective_config, load_config, show
from maguyva.errors import ConfigError


@pytest.fixture
def layered(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "xdg"
    (home / "maguyva").mkdir(parents=True)
    (home / "maguyva" / "config.toml").write_text("limit = 3\npreset = 'quick'\ncolor = 'never'\n"
                                                  "max_file_bytes = 111\n")  # fmt: skip
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        "[project]\nname='x'\n[tool.maguyva]\nlimit = 4\npreset = 'thorough'\nmax_file_bytes = 222\n"
    )
    (root / ".maguyva.toml").write_text("limit = 5\nindex_dir = 'idx'\n")
    for key in ("LIMIT", "PRESET", "COLOR", "MAX_FILE_BYTES", "INDEX_DIR"):
        monkeypatch.delenv(f"MAGUYVA_{key}", raising=False)
    return root


def test_precedence(layered: Path, monkeypatch):
    config = effective_config(layered)
    assert config.values["limit"] == 5 and config.sources["limit"].startswith("project")
    assert config.values["preset"] == "thorough" and config.sources["preset"].startswith(
        "pyproject"
    )
    assert config.values["color"] == "never" and config.sources["color"].startswith("user")
    assert config.values["embedding_provider"] == "local"
    assert config.sources["embedding_provider"] == "default"
    assert config.values["index_dir"] == str(layered / "idx")  # relative to the file
    monkeypatch.setenv("MAGUYVA_LIMIT", "6")
    assert effective_config(layered).values["limit"] == 6
    assert load_config(layered, {"limit": 7})["limit"] == 7
    assert load_config(layered, {"limit": None})["limit"] == 6  # None = flag not given


def test_env_types_are_checked(layered: Path, monkeypatch):
    monkeypatch.setenv("MAGUYVA_MODALITIES", "text, graph")
    monkeypatch.setenv("MAGUYVA_FOLLOW_SYMLINKS", "yes")
    monkeypatch.setenv("MAGUYVA_SEMANTIC_MAX_CHUNKS", "none")
    values = load_config(layered)
    assert values["modalities"] == ["text", "graph"] and values["follow_symlinks"] is True
    assert values["semantic_max_chunks"] is None
    monkeypatch.setenv("MAGUYVA_LIMIT", "ten")
    with pytest.raises(ConfigError, match="MAGUYVA_LIMIT must be an integer"):
        load_config(layered)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("limit = 'many'", "limit must be an integer"),
        ("preset = 'turbo'", "preset must be"),
        ("modalities = ['text', 'vectors']", "unknown vectors"),
        ("voyage_api_key = 'pa-123'", "secrets are not read from config files"),
        ("limit = [", "invalid TOML"),
    ],
)
def test_bad_files_are_clear_errors(layered: Path, text: str, message: str):
    (layered / ".maguyva.toml").write_text(text + "\n")
    with pytest.raises(ConfigError, match=message):
        load_config(layered)


def test_show_redacts_secrets(layered: Path, monkeypatch):
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-very-secret")
    rows = show(effective_config(layered))
    text = repr(rows)
    assert "pa-very-secret" not in text
    assert {"key": "VOYAGE_API_KEY", "value": "set (redacted)", "source": "env"} in rows


def test_unset_optional_keys_are_absent(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    values = load_config(tmp_path)
    assert "max_trigrams" not in values  # the walker's own default applies
    assert values["index_dir"] is None and values["root"] == str(tmp_path)
