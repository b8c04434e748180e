"""Shared fixtures: where the shared real data lives, and skipping cleanly when it is absent; no terminal width
inherited from the environment; property tests without a time limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# No test is timed: an example that took longer than hypothesis' 200 ms deadline on a loaded machine (CI's, a
# parallel run's) failed a test of what it computes, not of how fast.
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or a clean skip when this checkout has no ../shared (a user's fresh clone)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared not found ({path}): real-data checks run in CI, where ../shared is present")
    return path


@pytest.fixture(autouse=True)
def _no_inherited_width(monkeypatch):
    """Output to a pipe is fitted to ``$COLUMNS`` when it is set: a shell or test runner that exports it (pytest's
    parallel workers do) must not change what a test sees. A test that wants a width sets it."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
