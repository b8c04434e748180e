"""Shared fixtures: where the shared real data lives, and skipping cleanly when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or a clean skip when this checkout has no ../shared (a user's fresh clone)."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared not found ({path}): real-data checks run in CI, where ../shared is present")
    return path
