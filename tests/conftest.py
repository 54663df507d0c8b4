"""Shared fixtures: where the peer suites' data lives (read at run time, never copied into the repository).

The peer data sits beside the repository at ``../shared/peers/tau-bench`` (relative to the repository root).
Tests that need it take the ``peers_dir`` fixture (or ``retail_peer_dir``, ``airline_peer_dir``, or
``peer_data_dir`` parametrised indirectly by domain name) and are skipped, with the reason shown, when it is
absent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# The shared test helpers assert: rewrite them like test modules, so that failures show the compared values.
pytest.register_assert_rewrite("tests._support.json_folder", "tests._support.peer_gold", "tests._support.task_checks")

from tests._support.peer_gold import peer_domain_dir  # noqa: E402 - after the assert rewrite registration
from tests._support.store_urls import BACKENDS, fresh_store_url, report_header  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent


def peers_path() -> Path:
    """Return where the tau-bench peer data is expected (it may not exist)."""
    return (REPO_ROOT / ".." / "shared" / "peers" / "tau-bench").resolve()


def require_peers() -> Path:
    """Return the tau-bench peer data folder, or skip the calling test when it is absent."""
    path = peers_path()
    if not path.is_dir():
        pytest.skip(f"tau-bench peer data not found at {path} (expected ../shared/peers/tau-bench beside the repo)")
    return path


@pytest.fixture(scope="session")
def peers_dir() -> Path:
    """The tau-bench peer folder (``../shared/peers/tau-bench``); skips the test when absent."""
    return require_peers()


@pytest.fixture(scope="session")
def retail_peer_dir(peers_dir: Path) -> Path:
    """The tau-bench retail folder (data/, tasks_*.json, wiki.md); skips the test when absent."""
    return peer_domain_dir(peers_dir, "retail")


@pytest.fixture(scope="session")
def airline_peer_dir(peers_dir: Path) -> Path:
    """The tau-bench airline folder (data/, tasks_test.json, wiki.md); skips the test when absent."""
    return peer_domain_dir(peers_dir, "airline")


@pytest.fixture(scope="session")
def peer_data_dir(request: pytest.FixtureRequest, peers_dir: Path) -> Path:
    """The tau-bench data folder of the domain named by the indirect parameter; skips the test when absent.

    Use as ``@pytest.mark.parametrize("peer_data_dir", ["airline", "retail"], indirect=True)``.
    """
    return peer_domain_dir(peers_dir, request.param) / "data"


@pytest.fixture(scope="session")
def litellm() -> object:
    """The litellm module, imported lazily and offline (no price-list fetch); see ``tests/_support/fake_llm.py``."""
    from tests._support.fake_llm import import_litellm

    return import_litellm()


def pytest_configure(config: pytest.Config) -> None:
    """Keep the tests' template cache out of the user's cache folder: one private folder per test process.

    A ``TAUSIM_CACHE_DIR`` set by the caller is kept (tests that check the cache set their own).
    """
    if "TAUSIM_CACHE_DIR" not in os.environ:
        folder = tempfile.mkdtemp(prefix="tausim-test-cache-")
        os.environ["TAUSIM_CACHE_DIR"] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def pytest_report_header() -> str:
    """Say which databases the store tests run against (PostgreSQL only with ``TAUSIM_TEST_STORE_URL``)."""
    return report_header()


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a fresh, empty results-store database: a SQLite file, and a PostgreSQL database of its own.

    The PostgreSQL case is skipped without ``TAUSIM_TEST_STORE_URL``, and fails where ``CI`` is set (see
    ``tests/_support/store_urls.py``).
    """
    with fresh_store_url(request.param, tmp_path) as url:
        yield url
