"""Installs the native `maguyva` command (`rust/client`, issue 21) in place of the console
script, with the locator it reads: this interpreter and this package's directory.

    python -m maguyva.interfaces.native BINARY [--scripts DIR]     (`make setup` runs it)

The native client asks a repository's warm server without starting Python and execs this
interpreter on the Python client (`python -P -c ...client.main()`) for everything else, so
the console script it replaces is not needed beside it. A later `pip install` or `maturin
develop` writes the console script back: `maguyva` is then the Python client again, which
answers the same (only slower). Wheels carry no native client: maturin cannot ship a binary
beside a PyO3 module (PyO3/maturin#368).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from maguyva.interfaces import client

LOCATOR_MAGIC = "maguyva-native-client 1"
"""The first line of `maguyva.paths` (`rust/client/src/main.rs` reads it)."""


def package_dir() -> str:
    """The package directory exactly as `client.identity()` names it."""
    return os.path.dirname(os.path.dirname(os.path.realpath(client.__file__)))


def locator_text() -> str:
    paths = [sys.executable, package_dir()]
    if any("\n" in p for p in paths):
        raise ValueError(f"a path with a newline cannot be located: {paths}")
    return "\n".join([LOCATOR_MAGIC, *paths]) + "\n"


def install(binary: Path, scripts: Path | None = None) -> Path:
    """Copy `binary` to SCRIPTS/maguyva (replacing the console script) and write its locator
    SCRIPTS/maguyva.paths beside it; both replaced atomically. The installed path."""
    scripts = Path(scripts or sysconfig.get_path("scripts"))
    target = scripts / "maguyva"
    locator = scripts / "maguyva.paths"
    tmp_locator = locator.with_name(f".{locator.name}.{os.getpid()}")
    tmp_locator.write_text(locator_text())
    os.replace(tmp_locator, locator)
    tmp_target = target.with_name(f".{target.name}.{os.getpid()}")
    shutil.copyfile(binary, tmp_target)
    os.chmod(tmp_target, 0o755)
    os.replace(tmp_target, target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maguyva.interfaces.native")
    parser.add_argument("binary", type=Path, help="the built client (target/release/maguyva)")
    parser.add_argument("--scripts", type=Path, help="where to install (default: this "
                        "environment's scripts directory)")  # fmt: skip
    args = parser.parse_args(argv)
    print(f"installed {install(args.binary, args.scripts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
