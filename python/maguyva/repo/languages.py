"""Which language a file is written in, from its name. The structural modality maps these
names to tree-sitter grammars; files of unknown language get line-window chunks."""

from __future__ import annotations

from pathlib import PurePosixPath

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
    ".cs": "csharp", ".rb": "ruby", ".php": "php",
    ".kt": "kotlin", ".kts": "kotlin", ".swift": "swift",
    ".scala": "scala", ".sc": "scala",
    ".sh": "bash", ".bash": "bash",
}  # fmt: skip


def detect_language(path: str) -> str | None:
    """The language of `path` by extension, or None when unknown."""
    return EXTENSIONS.get(PurePosixPath(path).suffix.lower())
