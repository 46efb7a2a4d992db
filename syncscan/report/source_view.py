"""Source lines for the reports' snippets, read once per file, and the link to a
line in the repository when a URL template is configured.

The analysed code is read as text only (never imported); a file that cannot
be read gives no snippet rather than an error.
"""

from __future__ import annotations

from pathlib import Path


class SourceView:
    def __init__(self, root: Path, url_template: str | None = None) -> None:
        self.root = root
        self.url_template = url_template
        self._lines: dict[str, list[str] | None] = {}

    def lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            try:
                text = (self.root / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError, ValueError):
                self._lines[path] = None
            else:
                self._lines[path] = text.splitlines()
        return self._lines[path]

    def snippet(self, path: str, line: int, context: int = 2) -> list[tuple[int, str]]:
        """`(number, text)` of the lines around `line` ([] when unreadable)."""
        lines = self.lines(path) if path else None
        if not lines or not 1 <= line <= len(lines):
            return []
        first, last = max(1, line - context), min(len(lines), line + context)
        return [(n, lines[n - 1]) for n in range(first, last + 1)]

    def url(self, path: str, line: int) -> str | None:
        """The template with `{path}` and `{line}` filled in, or None."""
        if not self.url_template or not path:
            return None
        return self.url_template.replace("{path}", path).replace("{line}", str(line))
