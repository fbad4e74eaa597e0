"""Pasted error output and log lines: recognise them and take out the line worth searching.

People paste what their terminal printed: a Python traceback, a Go panic, a Rust panic or
error chain, a Java stack trace, a Node error, or a log line with a timestamp and a level.
These are exact_match questions (SPEC.md rule 4), and the target is the error itself: the
exception line ("KeyError: 'user_id'", as printed) or, for a log line, its message without the
timestamp, level, thread and logger fields. Checked before the snippet rule, so a multi-line
traceback is not taken for code to find similar copies of.
"""

from __future__ import annotations

import json
import re

from maguyva.support.lazyre import lazy_compile

_EXC_NAME = (
    r"(?:[A-Za-z_][\w]*\.)*[A-Z][\w]*(?:Error|Exception|Warning|Exit|Interrupt|Failure|Fault)"
)
"""An exception type, bare or qualified by lower-case packages or .NET's capitalised namespaces
(`System.InvalidOperationException`)."""
# An exception line as printed: "KeyError: 'x'", "java.io.IOException: Broken pipe",
# "Error [ERR_X]: ...", "django.core.exceptions.ImproperlyConfigured: ...".
_EXCEPTION_LINE = lazy_compile(
    r"^(?P<line>(?:"
    + _EXC_NAME
    + r"|(?:[a-z_]\w*\.){2,}[A-Z]\w*|Error|Warning|panic|[Ff]atal error"
    r"|(?:remote |fatal )?error|fatal|warning|error\[E\d{4}\]|warning\[\w+\]"
    r"|(?:error|warning) TS\d{4,5})"
    r"(?: \[[A-Z0-9_]+\])?: \S.*)$"
)
# Compiler and linter output opens with the place ("./cmd/main.go:12:2: undefined: x",
# "src/app.ts(12,5): error TS2345: ...", "app.py:3: error: ...", MSVC's
# "C:\\src\\net.cpp(120): error C2039: ..."): the message follows it.
_LOCATED = lazy_compile(
    r"^(?:\.{0,2}/|[A-Za-z]:\\)?(?:[\w.@-]+[/\\])*[\w.@-]+\.[A-Za-z]{1,5}"
    r"(?::\d+(?::\d+)?|\(\d+(?:,\d+)?\)):\s+"
    r"(?P<msg>\S.*)$"
)
# A line that opens with a database or vendor error code: "SQLSTATE[23000]: ...",
# "ORA-00942: ...", "ERROR 1045 (28000): ...", "E11000 duplicate key error ...".
_ERROR_CODE_LINE = lazy_compile(
    r"^(?:(?:SQLSTATE\[\w{5}\]|[A-Z]{2,5}-\d{3,5}|ERROR \d{3,5}(?: \(\w{5}\))?):"
    r"|E\d{4,5}) \S"
)
_EXCEPTION_INLINE = lazy_compile(r"(?<![\w.])(?P<line>(?:" + _EXC_NAME + r"|Error): \S.*)$")
"""An exception line inside a sentence; a bare "Error: " too ("the app prints Error: EACCES:
permission denied, open ... at boot"), as Node and Rust print it."""
_TRACEBACK = lazy_compile(r"Traceback \(most recent call last\)", re.IGNORECASE)
_FILE_LINE = lazy_compile(r"File \"[^\"]+\", line \d+(?:, in [\w.<>]+)?")
_JAVA_THREAD = lazy_compile(r"^Exception in thread \"[^\"]*\" (?P<line>\S+: .+)$")
_PREFIXES = lazy_compile(
    r"^(?:\(node:\d+\) |Uncaught (?:\(in promise\) )?|Caused by: |UnhandledPromiseRejectionWarning: "
    r"|Unhandled (?:Promise )?Rejection: )"
)
_REJECTION = lazy_compile(r"^Unhandled Rejection \((?P<type>\w+)\): ")
# One stack frame, Java ("\tat com.acme.Ledger.reserve(Ledger.java:211)") or JavaScript
# ("    at Object.resolve (/srv/api/tenant.js:27:11)", "    at /srv/api/index.js:3:1") or .NET
# ("   at Acme.Jobs.Run() in C:\\src\\Jobs.cs:line 88").
_FRAME_AT = lazy_compile(
    r"^\s*at\s+(?P<frame>(?:[\w$.<>\[\] ]+\s)?\(?[^()\s]+:\d+(?::\d+)?\)?"
    r"|[\w$.<>]+\((?:[\w$.-]+\.(?:java|kt|scala|groovy):\d+|Native Method|Unknown Source)\)"
    r"|[\w$.<>`]+\([^()]*\) in \S.*:line \d+)\s*$"
)
# A Go error chain ("dial tcp 10.0.3.17:5432: connect: connection refused"): lower-case words
# joined by ": " at least twice, no question, and words of failure in it.
_FAILURE_WORDS = lazy_compile(
    r"\b(?:refused|reset|denied|fail\w*|invalid|cannot|can't|unable|timeout|timed out|exceeded"
    r"|not found|no such|unexpected|EOF|unknown|missing|broken|closed|errors?|mismatch|unmarshal"
    r"|overflow|deadline|illegal|unsupported|forbidden|unauthorized|rejected|aborted|panic\w*"
    r"|no space|not permitted|too many|too large|in use|does not exist|already exists|no rows)\b"
)
_QUESTION_START = lazy_compile(
    r"^(?:how|why|what|where|who|which|when|is|are|can|could|should|does|do|find|show|list"
    r"|explain|search|grep|look|locate|tell|give|note|todo|fixme|quick|ok|hey|hi|context)\b",
    re.IGNORECASE,
)
# Syslog / journald: "May 02 13:45:10 host proc[pid]: message".
_SYSLOG = lazy_compile(
    r"^[A-Z][a-z]{2}\s+\d{1,2}\s+\d\d:\d\d:\d\d(?:[.,]\d+)?\s+\S+\s+[\w./@-]+(?:\[\d+\])?:\s+"
)
# Go's log package: "2024/05/02 13:45:10 message" (no level or logger field; "http: ..." is
# the message's own prefix), optionally with a "file.go:12: " source location.
_GO_LOG = lazy_compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(?:\.\d+)? (?:[\w./-]+\.go:\d+: )?")
_RUST_PANIC_OLD = lazy_compile(r"panicked at '(?P<msg>.*)', [\w./\\-]+:\d+(?::\d+)?\s*$")
_RUST_PANIC_NEW = lazy_compile(r"panicked at [\w./\\-]+:\d+(?::\d+)?:\s*$")
_STACK_LINE = lazy_compile(
    r"^\s+at \S|^\s*File \"|^goroutine \d+ \[|^Caused by:|^\s+\d+: |^note: run with `RUST_BACKTRACE"
    r"|^\s*--> \S+:\d+|^\s*\d*\s*\|"
)
_SEGFAULT = lazy_compile(r"^Segmentation fault(?: \(core dumped\))?$")

_TIMESTAMP = (
    r"\[?(?:\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|\d\d:\d\d:\d\d(?:[.,]\d+)?)\]?"
)
_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERRO|ERR|CRITICAL|FATAL|SEVERE)"
# A log line opens with a timestamp, an upper-case level ("ERROR", "WARNING:root:"), a level
# in brackets ("[error]"), a logfmt key or a klog header. A lower-case word at the start is
# prose ("error handling", "warning signs of a leak").
_LOG_START = lazy_compile(
    r"^\s*(?:" + _TIMESTAMP + r"|\[?" + _LEVEL + r"(?=[\s:\[\]])|\[(?i:" + _LEVEL + r")\]"
    r"|(?:level|lvl|time|ts)=|[IWEF]\d{4} \d\d:|[A-Z][a-z]{2}\s+\d{1,2}\s+\d\d:\d\d:\d\d(?:[.,]\d+)?\s)"
)
_LOGFMT_MSG = lazy_compile(r"\bmsg=(?:\"(?P<q>(?:[^\"\\]|\\.)*)\"|(?P<bare>\S+))")
_LOGFMT_ERR = lazy_compile(r"\b(?:err|error)=(?:\"(?P<q>(?:[^\"\\]|\\.)*)\"|(?P<bare>\S+))")
"""A logfmt line without `msg=` says what failed in `err=` (go-kit, Prometheus)."""
_KLOG = lazy_compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [\w./-]+:\d+\] (?P<msg>.+)$")
_LEADERS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^\[?" + _TIMESTAMP + r"\]?[\s,]*",
        r"^\[?" + _LEVEL + r"\b\]?(?:\[\d+\])?[\s:]*",
        r"^-+\s*",
        r"^\d+\s+---\s+",
        r"^\[[^\]]*\]\s*:?\s*",
        r"^\([^)]*\)\s*",
    )
]
# A logger name or source location before the message: "auth.client - ", "rustls::conn] ",
# "scheduler:", "db/pool.go:77\t", "o.s.boot.SpringApplication   : ".
_LOGGER = lazy_compile(
    r"^(?P<name>[\w.:/$-]*[\w$](?::\d+)?)\]?(?:\s*(?:-|:|\|)\s+|\t+|:(?=\S)|\]\s+)"
)


def _message(line: str) -> str:
    """A log line without its leading timestamp, level, thread and logger fields."""
    logfmt = _LOGFMT_MSG.search(line) or _LOGFMT_ERR.search(line)
    if logfmt:
        return logfmt.group("q") if logfmt.group("q") is not None else logfmt.group("bare")
    klog = _KLOG.match(line)
    if klog:
        return klog.group("msg").strip()
    go = _GO_LOG.match(line)
    if go and not re.match(r"\[?" + _LEVEL + r"\b", line[go.end() :], re.IGNORECASE):
        return line[go.end() :].strip()
    rest = _SYSLOG.sub("", line.strip(), count=1)
    logger_seen = False
    for _ in range(8):
        before = rest
        for leader in _LEADERS:
            rest = leader.sub("", rest, count=1)
        if rest == before and not logger_seen:
            # One logger name or source location, before or after the level ("auth.client -
            # WARNING - ..."); a single capitalised word ("Job: ...") is prose, not a logger.
            logger_seen = True
            logger = _LOGGER.match(rest)
            if logger and not re.fullmatch(r"[A-Z][a-z]+", logger.group("name")):
                rest = rest[logger.end() :]
        elif rest == before:
            break
    return rest.strip().strip(":- ").strip()


def _is_log_line(line: str) -> bool:
    if not _LOG_START.match(line):
        return False
    stripped = _message(line)
    return bool(stripped) and stripped != line.strip()


def _exception_line(line: str) -> str | None:
    if ": " not in line:
        return None  # every form below has "type: message"
    line = _PREFIXES.sub("", line.strip())
    if line.startswith("Unhandled Rejection ("):  # React's "Unhandled Rejection (TypeError): x"
        line = _REJECTION.sub(r"\g<type>: ", line)
    java = _JAVA_THREAD.match(line)
    if java:
        return java.group("line").strip()
    match = _EXCEPTION_LINE.match(line)
    if match and line.startswith(("warning:", "Warning:", "fatal:")) and _ASKED_AFTER.search(line):
        return None  # "warning: this is deprecated, who still calls it" is a question
    return match.group("line").strip() if match else None


_ASKED_AFTER = lazy_compile(
    r"[,;:—-]\s*(?:who|what|where|which|why|how|can|could|should|does|do|is|are)\b|\?\s*$"
)


def _json_log(line: str) -> str | None:
    """The message of a JSON log line (zap, bunyan, pino, structlog): `msg` or `message`."""
    if not (line.startswith("{") and line.endswith("}")) or '"level"' not in line + '"severity"':
        return None
    try:
        row = json.loads(line)
    except ValueError:
        return None
    if not isinstance(row, dict) or not ({"level", "severity", "lvl"} & row.keys()):
        return None
    message = row.get("msg", row.get("message"))
    return message.strip() if isinstance(message, str) and message.strip() else None


def _one_line(first: str) -> str | None:
    """A single pasted line that is not an exception line: a JSON or text log line, a stack
    frame, a segfault, a Go error chain, a Python traceback frame."""
    json_log = _json_log(first)
    if json_log:
        return json_log
    if first.startswith("Segmentation") and _SEGFAULT.match(first):
        return first
    if _is_log_line(first):
        return _message(first)
    if _ERROR_CODE_LINE.match(first):  # after log lines: a klog header opens "E0502 ..."
        return first
    frame = _FRAME_AT.match(first)
    if frame:
        return frame.group("frame").strip()
    file_line = _FILE_LINE.search(first) if 'File "' in first else None
    if file_line:
        return file_line.group(0)
    tagged = _TOOL_TAG.match(first) if first.startswith("[") else None
    if tagged and _TOOL_FAILURE.search(tagged.group("msg")) and "?" not in first:
        message = tagged.group("msg").strip()
        return _exception_line(message) or message
    return first if ": " in first and _error_chain(first) else None


_OP_ON_PLACE = lazy_compile(
    r"^[a-z]+ (?:(?:tcp|udp|ip|unix)[46]? )?(?:\S*[/\\]\S*|\S+\.\w+|\S+:\d+)$"
)
"""The first part of a two-part Go or OS error: an operation on a path or an address
("open /etc/app.yaml: no such file or directory", "write data.db: no space left on device",
Go's net errors "read tcp 10.0.0.5:443->10.0.0.9:5512: i/o timeout")."""
_TOOL_TAG = lazy_compile(r"^\[[a-z][\w@/.-]{1,30}\]\s+(?P<msg>\S.*)$")
"""A dev tool's tagged line ("[vite] Internal server error: Failed to resolve import ...",
"[nodemon] app crashed - ..."): the message after the tag, when it tells of a failure."""
_TOOL_FAILURE = lazy_compile(r"\b(?:[Ee]rror|crash\w*|[Ff]ail\w*)\b")


def _error_chain(line: str) -> bool:
    parts = line.split(": ")
    return (
        (len(parts) >= 3 or (len(parts) == 2 and bool(_OP_ON_PLACE.match(parts[0]))))
        and line[:1].islower()
        and "?" not in line
        and len(line) <= 300
        and all(part.strip() for part in parts)
        and not any(_QUESTION_START.match(part.strip()) for part in parts)
        and bool(_FAILURE_WORDS.search(line))
        and not (" " in line.partition(": ")[0] and _EXCEPTION_INLINE.search(line))
    )  # "getting TypeError: x: y in the report" is a sentence around an exception line


_HEADING = lazy_compile(
    r"^(?:Unhandled|Uncaught|Server|Runtime|Build|Compil\w+|Fatal)(?: [A-Z]?[a-z]+){0,3}"
    r" (?:Error|Exception|error|exception|failed)s?:?$"
)
"""A heading an overlay or a CI log prints above the exception line itself."""


def pasted_error(text: str) -> str | None:
    """The line to search for when `text` is pasted error output or a log line, else None."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return None
    first = lines[0].strip()
    if "(" in text and _TRACEBACK.search(text):
        for line in reversed(lines):
            found = _exception_line(line)
            if found:
                return found
        return "Traceback (most recent call last)"
    for index, line in enumerate(lines[:3] if "panicked at " in text else ()):
        old = _RUST_PANIC_OLD.search(line)
        if old:
            return old.group("msg")
        if _RUST_PANIC_NEW.search(line) and index + 1 < len(lines):
            return lines[index + 1].strip()
    located = _LOCATED.match(first) if ":" in first else None
    if located and not _QUESTION_START.match(located.group("msg")) and "?" not in first:
        return located.group("msg").strip()
    found = _exception_line(first)
    if found and (len(lines) == 1 or any(_STACK_LINE.search(x) for x in lines[1:])):
        return found
    if len(lines) > 1 and found and all(not re.search(r"[{};=]\s*$", x) for x in lines):
        return found
    if 1 < len(lines) <= 6 and _HEADING.match(first):
        second = _exception_line(lines[1])
        if second:
            return second  # Next.js's "Unhandled Runtime Error" over "TypeError: fetch failed"
    if len(lines) == 1:
        return _one_line(first)
    return None


_SAID_ERROR = lazy_compile(
    r"\b(?:says?|said|saying|getting|gets?|got|seeing|see|prints?|printed|logs?|logged|returns?"
    r"|returned|fails?\s+with|failed\s+with)\s+(?P<line>[a-z][\w.]*: [a-z][^?]*?)"
    r"(?=\s+(?:when|whenever|if|while|after|because|since)\s|\s*[?.]?\s*$)"
)
"""A Go-style error quoted after a verb of saying ("why does it say sql: no rows in result set
when I look up a tote"): a lower-case package, ": ", and a message that tells of a failure."""


def inline_exception(text: str) -> str | None:
    """An exception line inside a sentence ("I keep getting KeyError: 'region'"), or a Go-style
    error after a verb of saying."""
    if ": " not in text:
        return None
    match = _EXCEPTION_INLINE.search(text)
    if not match:
        said = _SAID_ERROR.search(text)
        if said and _FAILURE_WORDS.search(said.group("line").partition(": ")[2]):
            return _CONTEXT_TAIL.sub("", said.group("line")).strip()
        return None
    line = match.group("line").strip()
    if not re.search(r"['\"]$", line):
        line = _CONTEXT_TAIL.sub("", line)
    return line.rstrip(" ,;—-").strip()


_CONTEXT_TAIL = lazy_compile(
    r"(?:\s+(?:in|on|at|from|during|inside|when|after|before|with)\s+(?:the|a|an|my|our|this"
    r"|each|every|some|startup|boot|deploy|ci|prod|production|staging|tests?)\b[\w\s/.-]{0,40}"
    r"|\s+(?:on|at|during|after|in)\s+(?:startup|boot|deploy|import|login|shutdown|ci))\s*\??$",
    re.IGNORECASE,
)
"""Where the asker saw an error ("... in the parser", "... on startup"): not the message's."""


_QUALIFIED_EXCEPTION = lazy_compile(r"(?:[a-z_]\w*\.)+[A-Z]\w*(?:Exception|Error)")
"""A package-qualified exception name alone (`java.lang.NullPointerException`): what a log or
a crash report printed, so a text search for it, not rule 5's definition lookup."""


def qualified_exception(text: str) -> bool:
    """Whether `text` is a package-qualified exception name alone."""
    return _QUALIFIED_EXCEPTION.fullmatch(text) is not None
