"""Usage: python benches/fresh/pluggy_set.py eval/fresh/pluggy-1.5.0.jsonl ROOT (the unpacked corpus).

Write eval/fresh/pluggy-1.5.0.jsonl: hand-written questions, spans checked against the code.

Definition and understand spans: ctags `end` lines. Reference answers: `rg -n -w NAME` lines in
code (no imports, comments, docstrings or strings; each read by hand, exclusions listed).
Impact answers: the same plus the import lines (a rename breaks them too).
Similar: functions picked by hand, renamed by maguyva.eval.generate.rename_function.
"""

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from question_set import IM, D, E, QuestionSet, R, S, U, span

from maguyva.eval.generate import rename_function

ROOT = sys.argv[2]
CORPUS = "pluggy-1.5.0"
OUT = sys.argv[1]


def uses(name, exclude=(), imports=False):
    out = subprocess.run(
        ["rg", "-n", "-w", "-t", "py", name], cwd=ROOT, capture_output=True, text=True
    ).stdout
    spans = []
    for line in sorted(out.splitlines()):
        path, num, text = line.split(":", 2)
        if re.match(r"\s*#", text) or f"{path}:{num}" in exclude:
            continue
        if re.match(r"\s*(from \S+ )?import ", text) and not imports:
            continue
        spans.append({"path": path, "start": int(num), "end": int(num)})
    return spans


def renamed(path, start, end):
    lines = Path(ROOT, path).read_text().splitlines()[start - 1 : end]
    text = "\n".join(lines)
    indent = len(text) - len(text.lstrip())
    source = "\n".join(line[indent:] for line in lines)
    out = rename_function(source)
    assert out, (path, start)
    return out


QUESTIONS = QuestionSet(CORPUS)
q = QUESTIONS.add

H, M, C = "src/pluggy/_hooks.py", "src/pluggy/_manager.py", "src/pluggy/_callers.py"

# find_definition
q("def", "where is PluginManager defined", D, [span(M, 80, 524, "PluginManager")], "tune")
q("def", "class HookimplMarker", D, [span(H, 167, 280, "HookimplMarker")], "heldout")
q("def", "normalize_hookimpl_opts", D, [span(H, 283, 289, "normalize_hookimpl_opts")], "tune")
q("def", "definition of Result", D, [span("src/pluggy/_result.py", 27, 100, "Result")], "heldout")
q(
    "def",
    "where is TagTracer declared",
    D,
    [span("src/pluggy/_tracing.py", 17, 61, "TagTracer")],
    "tune",
)
q("def", "HookspecOpts class", D, [span(H, 42, 55, "HookspecOpts")], "heldout")
q(
    "def",
    "where is the exception PluginValidationError defined",
    D,
    [span(M, 49, 59, "PluginValidationError")],
    "heldout",
)

# find_references: uses in code
q("ref", "who calls _formatdef", R, uses("_formatdef", {f"{M}:527"}), "tune")
q("ref", "where is _warn_for_function used", R, uses("_warn_for_function", {f"{M}:39"}), "heldout")
q("ref", "callers of _raise_wrapfail", R, uses("_raise_wrapfail", {f"{C}:30"}), "tune")
q(
    "ref",
    "find every call of set_specification",
    R,
    uses("set_specification", {f"{H}:424"}),
    "heldout",
)
q("ref", "who uses get_hookcallers", R, uses("get_hookcallers", {f"{M}:436"}), "tune")
q(
    "ref",
    "references to _verify_all_args_are_provided",
    R,
    uses("_verify_all_args_are_provided", {f"{H}:480"}),
    "heldout",
)
q(
    "ref",
    "where is force_exception called",
    R,
    uses(
        "force_exception",
        {"src/pluggy/_result.py:79", "src/pluggy/_warnings.py:23", "src/pluggy/_warnings.py:24"},
    ),
    "tune",
)

# impact_analysis: uses plus imports
q(
    "imp",
    "what breaks if _multicall is renamed",
    IM,
    uses("_multicall", {f"{C}:53"}, imports=True),
    "tune",
)
q(
    "imp",
    "impact of changing HookCallError",
    IM,
    uses("HookCallError", {"src/pluggy/_result.py:22", "src/pluggy/__init__.py:13"}, imports=True),
    "heldout",
)
q(
    "imp",
    "what code depends on normalize_hookimpl_opts",
    IM,
    uses("normalize_hookimpl_opts", {f"{H}:283"}, imports=True),
    "tune",
)
q(
    "imp",
    "if I change the constructor of _SubsetHookCaller, what is affected",
    IM,
    uses(
        "_SubsetHookCaller",
        {f"{H}:592", f"{H}:634", "testing/test_pluginmanager.py:483"},
        imports=True,
    ),
    "heldout",
)
q(
    "imp",
    "what would changing DistFacade affect",
    IM,
    uses("DistFacade", {f"{M}:62", "docs/conf.py:70"}, imports=True),
    "tune",
)
q(
    "imp",
    "impact of changing what varnames returns",
    IM,
    uses("varnames", {f"{H}:295"}, imports=True),
    "heldout",
)
q(
    "imp",
    "what is affected if PluggyTeardownRaisedWarning is renamed",
    IM,
    uses(
        "PluggyTeardownRaisedWarning",
        {"src/pluggy/_warnings.py:11", "src/pluggy/__init__.py:22", f"{C}:49"},
        imports=True,
    ),
    "tune",
)

# understand_code (paraphrased: none names its answer)
q(
    "und",
    "in what order are hook implementations kept so wrappers run around the plain ones "
    "and tryfirst / trylast are honoured",
    U,
    [span(H, 453, 475, "HookCaller._add_hookimpl")],
    "tune",
)
q(
    "und",
    "how are the positional and keyword argument names of a hook function worked out, "
    "leaving out self",
    U,
    [span(H, 295, 357, "varnames")],
    "heldout",
)
q(
    "und",
    "how does calling a hook run each implementation and stop at the first result that is not None",
    U,
    [span(C, 53, 182, "_multicall")],
    "tune",
)
q(
    "und",
    "what checks reject a plugin's hook implementation that does not match its specification",
    U,
    [span(M, 328, 379, "PluginManager._verify_hook")],
    "heldout",
)
q(
    "und",
    "how are plugins discovered from the entry points of installed distributions",
    U,
    [span(M, 397, 425, "PluginManager.load_setuptools_entrypoints")],
    "tune",
)
q(
    "und",
    "how is an earlier hook call replayed for a plugin registered afterwards",
    U,
    [
        span(H, 515, 540, "HookCaller.call_historic"),
        span(H, 576, 585, "HookCaller._maybe_apply_history"),
    ],
    "heldout",
)
q(
    "und",
    "how can a hook be called on every plugin except a few",
    U,
    [span(M, 514, 524, "PluginManager.subset_hook_caller"), span(H, 592, 634, "_SubsetHookCaller")],
    "tune",
)
q(
    "und",
    "how is a trace message formatted with its tags and indentation",
    U,
    [span("src/pluggy/_tracing.py", 26, 41, "TagTracer._format_message")],
    "heldout",
)
q(
    "und",
    "what warning is given when the teardown of an old-style wrapper raises",
    U,
    [span(C, 43, 50, "_warn_teardown_exception")],
    "heldout",
)

# exact_match (two absent: the right answer is nothing)
q("lit", '"cannot have a historic firstresult hook"', E, [span(H, 150, 150)], "tune")
q(
    "lit",
    '"historic incompatible with yield/wrapper/hookwrapper"',
    E,
    [span(M, 332, 332)],
    "heldout",
)
q("lit", '"Plugin already registered under a different name"', E, [span(M, 147, 147)], "tune")
q(
    "lit",
    '"The wrapper=True and hookwrapper=True options are mutually exclusive"',
    E,
    [span(M, 377, 377)],
    "heldout",
)
q("lit", '"hook call must provide argument"', E, [span(C, 78, 78)], "tune")
q("lit", '"Plugin name registered already"', E, [], "heldout")
q("lit", '"cannot have a firstresult historic hook"', E, [], "tune")

# find_similar: real functions renamed (function, parameters, locals -> f, v0, v1, ...)
for path, start, end, symbol, split in [
    (H, 453, 475, "HookCaller._add_hookimpl", "heldout"),
    ("src/pluggy/_tracing.py", 26, 41, "TagTracer._format_message", "tune"),
    (H, 283, 289, "normalize_hookimpl_opts", "heldout"),
    (M, 381, 395, "PluginManager.check_pending", "tune"),
    (M, 436, 450, "PluginManager.get_hookcallers", "heldout"),
    (M, 198, 228, "PluginManager.unregister", "tune"),
]:
    q("sim", renamed(path, start, end), S, [span(path, start, end, symbol)], split)

QUESTIONS.write(OUT)
