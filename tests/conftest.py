"""Shared fixtures: real vLLM release trees, fetched once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_trees import fetch_release
from helpers import analyse

from syncscan.runner import RunResult


@pytest.fixture(scope="session")
def vllm_0_28() -> Path:
    """Source tree of vLLM 0.28.0 (``<src>/vllm/...``)."""
    return fetch_release("vllm", "0.28.0")


@pytest.fixture(scope="session")
def vllm_0_29() -> Path:
    """Source tree of vLLM 0.29.0 (``<src>/vllm/...``)."""
    return fetch_release("vllm", "0.29.0")


@pytest.fixture(scope="session")
def result_0_28(vllm_0_28: Path) -> RunResult:
    """syncscan's run on vLLM 0.28.0, shared by every test that reads it."""
    return analyse(vllm_0_28)


@pytest.fixture(scope="session")
def result_0_29(vllm_0_29: Path) -> RunResult:
    return analyse(vllm_0_29)


@pytest.fixture(autouse=True)
def plain_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wide, colourless rich output, so messages are never wrapped inside a path."""
    monkeypatch.setenv("COLUMNS", "400")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
