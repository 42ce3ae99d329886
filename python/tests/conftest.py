"""Shared paths of the package's tests: they read the repository's scenario files."""

from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.fixture
def catalogue_dir() -> Path:
    return REPOSITORY / "spec" / "catalogue"
