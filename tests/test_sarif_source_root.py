"""SARIF for a project in a subdirectory of its repository: URIs are repository-relative,
so code scanning can map them (they were relative to the analysed directory)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from helpers import BUGGY, SARIF_SCHEMA, copy_project

from syncscan.cli import main


@pytest.fixture
def nested(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose syncscan project lives in services/engine/."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)  # a checkout's marker is all the detection reads
    project = copy_project(BUGGY, repo / "services" / "engine")
    runner = project / "engine" / "runner.py"  # a malformed ignore: a notification with a file
    runner.write_text("# syncscan: ignore\n" + runner.read_text(encoding="utf-8"), encoding="utf-8")
    return repo, project


def sarif(capsys: pytest.CaptureFixture[str], *args: object) -> dict:
    assert main(["check", "--no-cache", "--format", "sarif", *map(str, args)]) == 1
    return json.loads(capsys.readouterr().out)


def uris(log: dict) -> list[str]:
    """Every %SRCROOT%-relative URI in the log."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("uriBaseId") == "%SRCROOT%":
                found.append(node["uri"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(log["runs"][0])
    return found


def test_uris_are_relative_to_the_repository_root(
    nested: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, project = nested
    log = sarif(capsys, project)
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    run = log["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.resolve().as_uri() + "/"
    found = uris(log)
    assert found and all(uri.startswith("services/engine/") for uri in found), found
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert "services/engine/engine/runner.py" in uris({"runs": [notes]})
    location = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location["uri"] == "services/engine/engine/runner.py"
    assert all((repo / uri).is_file() for uri in found)


def test_source_root_option_overrides_the_detected_root(
    nested: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, project = nested
    log = sarif(capsys, "--source-root", repo / "services", project)
    assert "engine/engine/runner.py" in uris(log)
    log = sarif(capsys, "--source-root", project, project)
    assert "engine/runner.py" in uris(log)
    code = main(
        [
            "check",
            "--no-cache",
            "--format",
            "sarif",
            "--source-root",
            str(project / "engine"),
            str(project),
        ]
    )
    assert code == 2
    assert "does not contain" in capsys.readouterr().err
