"""What must never be sent to a remote embedding provider, decided per file, never per chunk.

A chunk is a slice of a file: a private key split over two chunks leaves the second one
without its `BEGIN` line, and an `.env` file's second window has no name to give it away. So
the question is asked of the whole file (`file_secret_reason`), and a file that answers yes
is kept out of every remote request, all its chunks; it stays searchable by text and
structure. Three checks, all cheap:

- the name: dotenv and credential files, keys and certificates, credential directories;
- the content as a whole: a file that is mostly `KEY=VALUE` lines with a secret-ish key
  holding a literal value is an env file whatever its name;
- well-known credential shapes anywhere in it (private key blocks, cloud and SaaS tokens,
  connection strings, passwords in URLs, secret-named assignments with high-entropy values).

Hand-written patterns rather than a dependency: detect-secrets (the reference set, whose
shapes and keyword-plus-entropy idea these follow) had its last release in May 2024; each
shape here is tested (`tests/test_secrets.py`). False positives only cost semantic recall.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections import Counter

SECRET_PATH_GLOBS: tuple[str, ...] = (
    ".env", ".env.*", "*.env", "*.env.*", "env", "env.*", ".envrc", "*.pem", "*.key", "*.p12",
    "*.pfx", "*.jks", "*.keystore", "*.asc", "*.gpg", "*.ppk", "id_rsa*", "id_dsa*", "id_ecdsa*",
    "id_ed25519*", ".netrc", "_netrc", ".pgpass", ".npmrc", ".pypirc", ".htpasswd",
    ".git-credentials", ".boto", ".s3cfg", ".dockercfg", ".vault-token", "credentials",
    "credentials.*", "*credentials*.json", "secrets", "secrets.*", "*.secret", "*.secrets",
    "*_secrets.*", "*-secrets.*", "*secret*.json", "*secret*.y*ml", "*secret*.toml", "*.tfvars",
    "*.tfstate", "*.tfstate.*", "service-account*.json",
)  # fmt: skip
SECRET_DIRS: tuple[str, ...] = (".ssh", ".aws", ".gnupg", ".docker", ".kube", ".azure")

_SECRET_WORD = (
    r"passw(?:or)?d|pass|pwd|secret|token|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key"
    r"|auth|credential|client[_\-]?secret|signing[_\-]?key|account[_\-]?key|dsn"
)
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx))
    for name, rx in (
        ("private key block", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        ("private key block", r"PuTTY-User-Key-File-\d+:"),
        ("AWS access key id", r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b"),
        ("GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}"),
        ("GitLab token", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
        ("Slack token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
        ("Slack webhook", r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/\w+"),
        ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
        ("Stripe key", r"\b[rsp]k_live_[0-9A-Za-z]{20,}"),
        ("SendGrid key", r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
        ("Twilio key", r"\bSK[0-9a-f]{32}\b"),
        ("npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
        ("PyPI token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),
        ("OpenAI-style key", r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{32,}"),
        ("Voyage key", r"\bpa-[A-Za-z0-9_\-]{30,}"),
        (
            "Azure connection string",
            r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*[A-Za-z0-9+/%=&:_\-]{20,}",
        ),
        (
            "JSON web token",
            r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        ),
        ("password in URL", r"[a-z][a-z0-9+.\-]*://[^/\s:@]+:[^/\s:@]{6,}@"),
    )
)
_ASSIGNMENT = re.compile(
    rf"(?i)(?P<key>\b[\w.\-]*(?:{_SECRET_WORD})[\w\-]*)[\"']?\s*(?::=|=>|[:=])\s*"
    r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\s]{8,})(?P=q)|(?P<bare>[^\s\"'`$<{}()\[\];,]{12,})(?=[\s;,]|$))",
    re.MULTILINE,
)
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.\-]*)\s*=\s*(.*?)\s*$")
_SECRET_KEY = re.compile(rf"(?i)(?:{_SECRET_WORD}|database_url|_url$|_uri$)")
_PLACEHOLDER = re.compile(r"(?i)^(?:|x+|\*+|changeme|change_me|todo|none|null|false|true|"
                          r"<[^>]*>|\$\{?\w+\}?|your[_\-].*|example.*|dummy.*|\.\.\.)$")  # fmt: skip
MIN_ENTROPY = 3.0
"""Bits per character below which a secret-named value looks like a word or a name, not a
key (detect-secrets' keyword detector uses the same idea; `hunter2` is 2.8, a random 20-char
base64 value about 4.2)."""


def shannon_entropy(text: str) -> float:
    """Bits per character of `text` (0 for empty)."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())


def is_secret_path(path: str) -> bool:
    """True for files that typically hold credentials (path relative, `/`-separated)."""
    parts = path.split("/")
    if any(part in SECRET_DIRS for part in parts[:-1]):
        return True
    name = parts[-1].lower()
    return any(fnmatch.fnmatchcase(name, glob) for glob in SECRET_PATH_GLOBS)


def _looks_like_reference(value: str) -> bool:
    """A bare value that names something (`self.password`, `settings.API_KEY`, `get_token`)."""
    return re.fullmatch(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*", value) is not None and (
        "." in value or "_" in value or value.islower()
    )


def _assignment_reason(text: str) -> str | None:
    for m in _ASSIGNMENT.finditer(text):
        value = m.group("quoted") or m.group("bare") or ""
        if m.group("bare") and _looks_like_reference(value):
            continue
        if _PLACEHOLDER.match(value) or shannon_entropy(value) < MIN_ENTROPY:
            continue
        return "credential assignment"
    return None


def env_file_reason(text: str) -> str | None:
    """ "env file by content" when most non-blank, non-comment lines are `KEY=VALUE` and a
    secret-ish key holds a literal value (an `.env` under another name)."""
    assignments = other = 0
    secret = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ";", "//")):
            continue
        m = _ENV_LINE.match(line)
        raw = m.group(2) if m else ""
        if m is None or (" " in raw and raw[:1] not in "\"'"):
            other += 1
            if other > 50 and other > assignments:
                return None
            continue
        assignments += 1
        value = raw.strip("\"'")
        if _SECRET_KEY.search(m.group(1)) and not _PLACEHOLDER.match(value):
            secret = True
    if secret and assignments >= 2 and assignments >= 0.6 * (assignments + other):
        return "env file by content"
    return None


def secret_reason(text: str) -> str | None:
    """The kind of credential the text seems to contain, or None."""
    for name, pattern in _PATTERNS:
        if pattern.search(text):
            return name
    return _assignment_reason(text)


def file_secret_reason(path: str, text: str | None) -> str | None:
    """Why the file at `path` (root-relative) with content `text` must not leave the machine,
    or None. `text=None` (unreadable now) decides by the name alone."""
    if is_secret_path(path):
        return "secret path"
    if text is None:
        return None
    return env_file_reason(text) or secret_reason(text)
