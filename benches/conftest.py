"""Side-by-side ratios: after a benchmark run, print each benchmark's median against the
fastest one of its group (peers share a `group`), so every table reads "x times the peer"."""

from __future__ import annotations

from typing import Any


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    session = getattr(config, "_benchmarksession", None)
    benches = [b for b in getattr(session, "benchmarks", []) or [] if b.stats is not None]
    groups: dict[str, list[Any]] = {}
    for bench in benches:
        groups.setdefault(bench.group or bench.fullname, []).append(bench)
    rows = [(g, bs) for g, bs in sorted(groups.items()) if len(bs) > 1]
    if not rows:
        return
    terminalreporter.section("side by side (median, ratio to the fastest in the group)")
    for group, members in rows:
        fastest = min(b.stats.median for b in members)
        terminalreporter.write_line(f"{group}:")
        for bench in sorted(members, key=lambda b: b.stats.median):
            ratio = bench.stats.median / fastest if fastest else float("nan")
            terminalreporter.write_line(
                f"  {bench.name:<48} {bench.stats.median * 1e6:>12.2f} us  x{ratio:.2f}"
            )
