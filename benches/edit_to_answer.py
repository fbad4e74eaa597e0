"""Edit to answer, as a reader in another process sees it (docs/durability.md). Usage:

    python benches/edit_to_answer.py ROOT MODALITIES --target PATH [--runs N]
        [--follows | --no-follows] [--in-process] [--watch [--fresh]] [--set KEY=JSON ...]

A long-running writer (`Indexer`, as `maguyva watch` runs it) in this process; a warm reader
(`Engine.warm`, as `maguyva mcp` runs it) in a child process, or with `--in-process` in a
thread of the writer's process, sharing its GIL (as `maguyva mcp --watch` runs). Each run
appends a new function to the target file, notes the time (CLOCK_MONOTONIC, shared by both
processes) and updates the index with the path as a hint, as the watcher does. The reader
polls the manifest (one `stat` per millisecond); on each new generation it opens the engine,
asks the structural modality for the new function, then each other modality in turn, and
reports when each first ranked it first. With `--watch` the writer is a `maguyva.build.watch.Watcher`
(a thread of this process, its defaults: 50 ms of quiet ends a burst) and the edit reaches it
through the OS's file events, as under `maguyva watch`: the figures then include noticing it.
`--fresh`: the watcher has just started (its own writer, prepared by its first check, as
`Watcher.run` does), so the first run is the first edit after a start. So `edit_to_answer_s` is the edit until the first
answer that has it, on the clock, with whatever the writer still does after that commit
(`--follows`: the graph generation) running alongside the reader.

With `--follows` (`graph_follows`, as the watcher runs), the graph of an update comes one
generation after the others: `graph_answer_s` is then later than the others (`generations`:
the generation at which each modality first answered).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

QUESTIONS = {
    # modality -> (query, options) whose first result must be the new function `name`
    "structural": lambda name, n: (name, {}),
    "text": lambda name, n: (name, {}),
    "semantic": lambda name, n: (f"the function {name} that returns {n}", {}),
    "graph": lambda name, n: (f"where is {name} defined", {"intent": "find_definition"}),
}


def reader(root: Path, modalities: list[str], lines, emit) -> None:
    """The reader: warm once, then for each `name n` of `lines`, poll until every modality
    ranks the function first; `emit` one JSON line of CLOCK_MONOTONIC times."""
    from maguyva.query.engine import Engine
    from maguyva.store.generations import IndexDir

    index = IndexDir(root / ".maguyva")
    manifest = index.path / "manifest.json"
    engine = Engine.open(root)
    engine.warm()
    emit(json.dumps({"ready": True}))
    for line in lines:
        name, n = line.split()
        found: dict[str, float] = {}
        notes: dict[str, list[str]] = {}
        generations: dict[str, int] = {}
        seen = None
        deadline = time.monotonic() + 60
        while len(found) < len(modalities) and time.monotonic() < deadline:
            st = os.stat(manifest)
            stamp = (st.st_ino, st.st_mtime_ns)
            if stamp == seen:
                time.sleep(0.001)
                continue
            seen = stamp
            engine = Engine.open(root)
            for modality in modalities:
                if modality in found:
                    continue
                query, options = QUESTIONS[modality](name, int(n))
                response = engine.search(query, modalities=[modality], limit=10, **options)
                top = response.results[:1]
                if top and (top[0].symbol or "").rsplit(".", 1)[-1] == name:
                    found[modality] = time.monotonic()
                    notes[modality] = response.notes
                    generations[modality] = engine.generation.number
                elif modality == "structural":
                    break  # not this generation: the others are asked on a later one
        emit(json.dumps({"found": found, "notes": notes, "generations": generations}))


class _Pipe:
    """A line queue with the file methods the bench uses of a child's stdin and stdout."""

    def __init__(self) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()

    def write(self, text: str) -> None:
        self.lines.put(text)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.lines.put(None)

    def readline(self) -> str:
        return self.lines.get() or ""

    def __iter__(self):
        return iter(self.lines.get, None)


class _InProcess:
    """The reader as a thread of this process, shaped like the child `Popen`."""

    def __init__(self, root: Path, modalities: list[str]) -> None:
        self.stdin, self.stdout = _Pipe(), _Pipe()
        self.thread = threading.Thread(
            target=reader, args=(root, modalities, self.stdin, self.stdout.write), daemon=True
        )
        self.thread.start()

    def wait(self, timeout: float) -> None:
        self.thread.join(timeout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("modalities")
    parser.add_argument("--target", required=True)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--follows", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=JSON")
    parser.add_argument("--in-process", action="store_true",
                        help="the reader is a thread of the writer's process (`mcp --watch`)")  # fmt: skip
    parser.add_argument("--watch", action="store_true",
                        help="edits reach a `Watcher` (a thread here) through the OS's events")  # fmt: skip
    parser.add_argument("--fresh", action="store_true",
                        help="with --watch: a watcher just started (its first check prepares it)")  # fmt: skip
    parser.add_argument("--reader", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    modalities = args.modalities.split(",")
    if args.reader:
        reader(args.root, modalities, sys.stdin, lambda line: print(line, flush=True))
        return
    from maguyva.build.indexer import Indexer

    config = {"modalities": modalities, "graph_follows": args.follows}
    for item in args.set:
        key, _, value = item.partition("=")
        config[key] = json.loads(value)
    root, target = args.root, args.root / args.target
    original = target.read_text()
    writer = Indexer(root, config=config)
    writer.update()
    if not args.fresh:
        target.write_text(original + "\n\ndef maguyva_race_warm():\n    return 0\n")
        writer.update()  # the writer's first update loads its state once
    watcher = None
    if args.watch:  # the edits reach a real watcher through the OS's events instead
        from maguyva.build.watch import Watcher

        watcher = Watcher(root, config=config)
        if not args.fresh:
            watcher.indexer = writer  # the warmed writer (as one that has run a while)
        threading.Thread(target=watcher.run, daemon=True).start()
        while watcher.stats.last is None:
            time.sleep(0.05)
        time.sleep(1.0)  # the directories are watched
    child = _InProcess(root, modalities) if args.in_process else subprocess.Popen(
        [sys.executable, __file__, str(root), args.modalities, "--target", args.target,
         "--reader"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    assert json.loads(child.stdout.readline()).get("ready")
    rows = []
    try:
        for n in range(args.runs):
            name = f"maguyva_race_{n}"
            child.stdin.write(f"{name} {n}\n")
            child.stdin.flush()
            time.sleep(0.2)  # the reader is polling
            load = os.getloadavg()[0]
            updates = watcher.stats.updates if watcher is not None else 0
            edited = time.monotonic()
            target.write_text(original + f"\n\ndef {name}():\n    return {n}\n")
            if watcher is None:
                summary = writer.update(hints=[args.target])
                returned = time.monotonic()
            answer = json.loads(child.stdout.readline())
            if watcher is not None:
                while watcher.stats.updates == updates or watcher.stats.last is None:
                    time.sleep(0.001)
                summary, returned = watcher.stats.last, time.monotonic()
            found = answer["found"]
            row = {"load": load, "update_s": round(returned - edited, 4),
                   "timings_ms": {k: round(v * 1000, 1) for k, v in summary.timings_s.items()}}  # fmt: skip
            for modality in modalities:
                at = found.get(modality)
                row[f"{modality}_answer_s"] = round(at - edited, 4) if at is not None else None
            row["edit_to_answer_s"] = row["structural_answer_s"]
            row["all_answers_s"] = (
                max(row[f"{m}_answer_s"] for m in modalities)
                if all(row[f"{m}_answer_s"] is not None for m in modalities) else None
            )  # fmt: skip
            row["generations"] = answer["generations"]
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        if watcher is not None:
            watcher.stop()
        child.stdin.close()
        child.wait(timeout=60)
        target.write_text(original)
        writer.update()
    keys = ["update_s", "edit_to_answer_s", "all_answers_s"]
    keys += [f"{m}_answer_s" for m in modalities]
    medians = {
        k: statistics.median(r[k] for r in rows if r[k] is not None)
        for k in keys if any(r[k] is not None for r in rows)
    }  # fmt: skip
    print(json.dumps({"follows": args.follows, "in_process": args.in_process,
                      "watch": args.watch, "fresh": args.fresh, "runs": rows, "median": medians,
                      "load_after": os.getloadavg()}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
