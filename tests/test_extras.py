"""Optional extras: the core install has no Voyage client, Ray, LanceDB or pyarrow, and a
feature that needs one says which extra to install. Each child here runs with those modules
made unimportable (`tests/support/blocked_imports/sitecustomize.py`): a real import failure,
as on a machine where the extra was never installed."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCKER = Path(__file__).parent / "support" / "blocked_imports"
EXTRA_MODULES = {"voyage": ["voyageai"], "scale": ["ray", "lancedb", "pyarrow"]}
ALL_BLOCKED = [m for mods in EXTRA_MODULES.values() for m in mods]


def _run(code: str, *args: str, blocked: list[str] = ALL_BLOCKED) -> subprocess.CompletedProcess:
    env = {**os.environ, "MAGUYVA_TEST_BLOCKED": ",".join(blocked)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BLOCKER), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_the_extras_stay_out_of_the_core_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = " ".join(project["dependencies"])
    for extra, modules in EXTRA_MODULES.items():
        assert extra in project["optional-dependencies"]
        for module in modules:
            assert module not in core, module
            assert any(d.startswith(module) for d in project["optional-dependencies"][extra])


def test_the_blocker_is_a_real_import_failure():
    result = _run("import voyageai")
    assert result.returncode == 1 and "ModuleNotFoundError" in result.stderr


def test_index_and_search_without_any_extra(tmp_path: Path) -> None:
    """The CLI, the API and the MCP server import, build and answer without the extras."""
    (tmp_path / "app.py").write_text("def greet(name):\n    return f'hello {name}'\n")
    code = (
        "import sys, maguyva.interfaces.mcp_server\n"
        "from maguyva.interfaces.cli.main import main\n"
        "assert main(['index', sys.argv[1], '--modalities', 'text,structural,graph']) == 0\n"
        "assert main(['search', 'where is greet defined', '--root', sys.argv[1]]) == 0\n"
        f"assert not set({ALL_BLOCKED!r}) & set(sys.modules), 'an extra was imported'\n"
    )
    result = _run(code, str(tmp_path))
    assert result.returncode == 0, result.stderr[-2000:]
    assert "app.py" in result.stdout


def test_a_missing_voyage_extra_names_it():
    code = (
        "from maguyva.errors import ProviderError\n"
        "from maguyva.modalities.semantic.embed import VoyageProvider\n"
        "try:\n"
        "    VoyageProvider('pa-test-key').embed(['a'], 'document')\n"
        "except ProviderError as exc:\n"
        "    print(exc)\n"
    )
    result = _run(code, blocked=["voyageai"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert "pip install 'maguyva[voyage]'" in result.stdout, result.stdout


def test_a_missing_scale_extra_names_it(tmp_path: Path) -> None:
    ray = (
        "from maguyva.errors import MaguyvaError\n"
        "from maguyva.scale.distributed import RayExecutor\n"
        "try:\n"
        "    RayExecutor()\n"
        "except MaguyvaError as exc:\n"
        "    print(exc)\n"
    )
    lance = (
        "import sys\n"
        "from maguyva.errors import MaguyvaError\n"
        "from maguyva.scale.vectorstore import open_store\n"
        "try:\n"
        "    open_store('lancedb', width=256, uri=sys.argv[1])\n"
        "except MaguyvaError as exc:\n"
        "    print(exc)\n"
    )
    for module, code in (("ray", ray), ("lancedb", lance), ("pyarrow", lance)):
        result = _run(code, str(tmp_path / "lance"), blocked=[module])
        assert result.returncode == 0, result.stderr[-2000:]
        assert "pip install 'maguyva[scale]'" in result.stdout, (module, result.stdout)


def test_the_cli_names_the_missing_voyage_extra(tmp_path: Path) -> None:
    """`maguyva index` with the voyage provider and no client: semantic is unavailable and the
    reason says what to install; the other modalities are not affected."""
    (tmp_path / "app.py").write_text("def greet(name):\n    return name\n")
    code = (
        "import os, sys\n"
        "os.environ.update(MAGUYVA_EMBEDDING_PROVIDER='voyage', VOYAGE_API_KEY='pa-test-key')\n"
        "from maguyva.interfaces.cli.main import main\n"
        "sys.exit(main(['index', sys.argv[1], '--modalities', 'text,semantic']))\n"
    )
    result = _run(code, str(tmp_path), blocked=["voyageai"])
    assert result.returncode == 0, result.stderr[-2000:]
    semantic = next(line for line in result.stdout.splitlines() if "semantic" in line)
    assert "unavailable" in semantic and "pip install 'maguyva[voyage]'" in semantic, semantic
    assert "Traceback" not in result.stderr
