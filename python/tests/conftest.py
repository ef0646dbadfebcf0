"""Fixtures: the shared stories260K files (../shared/data, beside the
repository), the Gemma 3 270M GGUF (tools/get_model.sh) and the staticlm CLI
(STATICLM_CLI, set by tools/test_python.sh). Each test that needs one skips
with a message naming what is missing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import staticlm

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("STATICLM_SHARED_DATA", REPO.parent / "shared" / "data"))
GEMMA = Path(os.environ.get("STATICLM_GEMMA3_GGUF",
                            Path(os.environ.get("STATICLM_CACHE", Path.home() / ".cache" / "staticlm"))
                            / "gemma-3-270m-q4_k_m.gguf"))
THREADS = 2


def peir(x: np.ndarray, ref: np.ndarray) -> float:
    """RUNTIME.md's PEIR: max|x - r| over the reference's range."""
    x64, r64 = x.astype(np.float64), ref.astype(np.float64)
    rng = float(r64.max() - r64.min())
    return float(np.max(np.abs(x64 - r64))) / (rng if rng > 0 else 1.0)


def _need(path: Path, what: str) -> Path:
    if not path.exists():
        pytest.skip(f"{what}: {path} is absent")
    return path


@pytest.fixture(scope="session")
def stories_dir() -> Path:
    return _need(SHARED / "stories260K-hf", "stories260K (the shared test data)")


@pytest.fixture(scope="session")
def stories_reference() -> dict:
    path = _need(SHARED / "stories260K" / "reference.json", "stories260K reference (the shared test data)")
    return json.loads(path.read_text())


@pytest.fixture(scope="session")
def stories_expected_text() -> str:
    path = _need(SHARED / "stories260K" / "expected_greedy_200.txt", "stories260K expected text")
    return path.read_text()


@pytest.fixture(scope="session")
def stories(stories_dir: Path) -> staticlm.Model:
    """stories260K with f32 weights: the contract the reference logits are checked against."""
    return staticlm.Model(stories_dir, weights="f32", threads=THREADS)


@pytest.fixture(scope="session")
def stories_q8(stories_dir: Path) -> staticlm.Model:
    """stories260K with the CLI's default weights for a directory (q8)."""
    return staticlm.Model(stories_dir, threads=THREADS)


@pytest.fixture(scope="session")
def gemma_path() -> Path:
    return _need(GEMMA, "Gemma 3 270M GGUF (bash tools/get_model.sh installs it; or set STATICLM_GEMMA3_GGUF)")


@pytest.fixture(scope="session")
def gemma(gemma_path: Path) -> staticlm.Model:
    return staticlm.Model(gemma_path, threads=THREADS)


@pytest.fixture(scope="session")
def cli() -> str:
    path = os.environ.get("STATICLM_CLI")
    if not path:
        pytest.skip("STATICLM_CLI is not set (tools/test_python.sh sets it to build/tools/staticlm)")
    if not Path(path).is_file():
        pytest.skip(f"STATICLM_CLI={path} is not a file")
    return path
