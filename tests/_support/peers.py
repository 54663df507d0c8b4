"""The tau2-bench suite's data beside the repository (``../shared/peers/tau2-bench``) and the mark skipping a test
when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

TAU2 = Path(__file__).resolve().parents[2].parent / "shared" / "peers" / "tau2-bench"
needs_tau2 = pytest.mark.skipif(not (TAU2 / "mock" / "tasks.json").is_file(), reason="tau2-bench data absent")
