"""Shared pytest configuration: helper imports, the ``slow`` marker and shared data."""

import sys

from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent

# Let test modules in sub-folders import the helpers here, e.g. ``from reference import ...``.
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


def pytest_addoption(parser):
    parser.addoption(
        "--runslow", action="store_true", default=False, help="also run tests marked slow"
    )


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow test: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The ``shared/data`` folder that sits beside the repository, if present."""
    path = TESTS_DIR.parent.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} not found (it lives beside the repository)")
    return path
