"""Shared fixtures: real vLLM release trees, fetched once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_trees import fetch_release


@pytest.fixture(scope="session")
def vllm_0_28(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Source tree of vLLM 0.28.0 (``<src>/vllm/...``)."""
    return fetch_release("vllm", "0.28.0")


@pytest.fixture(scope="session")
def vllm_0_29(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Source tree of vLLM 0.29.0 (``<src>/vllm/...``)."""
    return fetch_release("vllm", "0.29.0")
