"""What a run that failed inside syncscan writes where a report was expected.

A CI job that parses `--format json` or uploads SARIF must not read a crash
as "no findings": the JSON document has an `error` and no `findings`, and the
SARIF run says `executionSuccessful: false` with the message as a tool
notification. Console, GitHub and Markdown runs get the message on stderr only.
"""

from __future__ import annotations

import json
from typing import Any

from syncscan import __version__

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def render(fmt: str, message: str, site: str | None, exit_code: int) -> str | None:
    """The failure as a document of format `fmt`, or None where it has none."""
    if fmt == "json":
        error = {"kind": "internal", "message": message, "path": site}
        return _dump({"version": __version__, "error": error})
    if fmt == "sarif":
        notification: dict[str, Any] = {"level": "error", "message": {"text": message}}
        if site is not None:
            notification["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": site}}}]
        run = {
            "tool": {"driver": {"name": "syncscan", "version": __version__}},
            "invocations": [
                {
                    "executionSuccessful": False,
                    "exitCode": exit_code,
                    "toolExecutionNotifications": [notification],
                }
            ],
            "results": [],
        }
        return _dump({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]})
    return None


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
