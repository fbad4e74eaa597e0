"""What must never be sent to a remote embedding provider: secret files and secret-looking text.

Two checks, both cheap: the path (dotenv files, keys, certificates, credential stores) and a
scan of the content for well-known credential shapes. A hit keeps the chunk out of the remote
request; it stays searchable by text and structure. False positives only cost semantic recall.
"""

from __future__ import annotations

import fnmatch
import re

SECRET_PATH_GLOBS: tuple[str, ...] = (
    ".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks",
    "*.keystore", "*.asc", "*.gpg", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    ".netrc", ".pgpass", ".npmrc", ".pypirc", ".htpasswd", "credentials", "credentials.*",
    "*credentials*.json", "secrets", "secrets.*", "*.secret", "*.secrets", "*_secrets.*",
    "*-secrets.*", "*secret*.json", "*secret*.y*ml", "*secret*.toml", "*.tfvars", "*.tfstate", "service-account*.json",
)  # fmt: skip
SECRET_DIRS: tuple[str, ...] = (".ssh", ".aws", ".gnupg", ".docker", ".kube")

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx))
    for name, rx in (
        ("private key block", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        ("AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        ("GitHub token", r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{40,}"),
        ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
        ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),
        ("Stripe key", r"\b[rs]k_live_[0-9A-Za-z]{20,}"),
        ("OpenAI-style key", r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{32,}"),
        ("Voyage key", r"\bpa-[A-Za-z0-9_\-]{30,}"),
        (
            "JSON web token",
            r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        ),
        ("password in URL", r"[a-z][a-z0-9+.\-]*://[^/\s:@]+:[^/\s:@]{6,}@"),
        (
            "credential assignment",
            r"(?i)\b[\w.\-]*(?:api[_\-]?key|secret|passw(?:or)?d|access[_\-]?token|auth[_\-]?token)"
            r"[\w\-]*\s*[:=]\s*[\"']?(?=[^\s\"']*[0-9])(?=[^\s\"']*[A-Za-z])[^\s\"'$<{]{16,}",
        ),
    )
)


def is_secret_path(path: str) -> bool:
    """True for files that typically hold credentials (path relative, `/`-separated)."""
    parts = path.split("/")
    if any(part in SECRET_DIRS for part in parts[:-1]):
        return True
    name = parts[-1].lower()
    return any(fnmatch.fnmatchcase(name, glob) for glob in SECRET_PATH_GLOBS)


def secret_reason(text: str) -> str | None:
    """The kind of credential the text seems to contain, or None."""
    for name, pattern in _PATTERNS:
        if pattern.search(text):
            return name
    return None
