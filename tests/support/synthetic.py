"""A generated Python package of known shape, for measuring how a build's memory and time grow
with the corpus (real repositories do not come in sizes 1x, 2x, 4x of each other)."""

from __future__ import annotations

from pathlib import Path


def generated_corpus(root: Path, modules: int, functions: int = 20) -> Path:
    """Write `root/pkg/`: `modules` files of `functions` functions, each calling a function of
    the next module (a call graph with one long cycle), with docstrings and an error message."""
    for m in range(modules):
        body = [f'"""Module {m}."""', f"from pkg import mod{(m + 1) % modules} as nxt", ""]
        for f in range(functions):
            body += [f"def func_{m}_{f}(value, scale={f}):",
                     f'    """Scale value by {f} and pass it on ({m}/{f})."""',
                     f"    total = value * scale + {m}",
                     f"    if total > {1000 + f}:",
                     f'        raise ValueError("overflow in module {m} function {f}")',
                     f"    return nxt.func_{(m + 1) % modules}_{(f + 1) % functions}(total)",
                     ""]  # fmt: skip
        path = root / "pkg" / f"mod{m}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(body))
    (root / "pkg" / "__init__.py").write_text("")
    return root
