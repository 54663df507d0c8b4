"""The dual-control sync hook runs only when a write may change what the domain's sync does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator import Task, ToolContext, UserScenario, get_domain
from simulator.world.dual import syncer
from simulator.world.replay import prepare_trial

TAU2 = Path(__file__).resolve().parents[2] / ".." / "shared" / "peers" / "tau2-bench"


def test_writes_to_ignored_tables_skip_the_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (TAU2 / "telecom" / "db.toml").exists():
        pytest.skip("tau2-bench data not found")
    telecom = get_domain("telecom")
    assert telecom.sync_ignores() == frozenset({"device"})
    task = Task.model_validate({"id": "t", "scenario": UserScenario(instructions="x").model_dump(),
                                "initial_state": {"setup": [{"requestor": "user", "name": "set_user_info",
                                                             "arguments": {"name": "John Smith",
                                                                           "phone_number": "555-123-2002"}}]}})
    calls: list[int] = []
    real = type(telecom).sync

    def counted(self: Any, ctx: ToolContext) -> None:
        calls.append(1)
        real(self, ctx)

    with telecom.template().trial() as db:
        prepare_trial(telecom, db, task)
        monkeypatch.setattr(type(telecom), "sync", counted)
        ctx = ToolContext(db.session, db.options)
        sync = syncer(telecom, ctx)
        sync()  # the first call always syncs
        assert len(calls) == 1
        sync()  # nothing written since
        assert telecom.user_toolbox().dispatch(ctx, "toggle_airplane_mode", {}).status == "ok"  # the phone only
        sync()
        assert len(calls) == 1
        out = telecom.toolbox().dispatch(ctx, "suspend_line", {"customer_id": "C1001", "line_id": "L1002",
                                                               "reason": "test"})
        assert out.status == "ok", out.content
        sync()  # an agent record changed: synced, and the phone's surroundings follow
        assert len(calls) == 2
        assert telecom.dump(db)["surroundings"]["1"]["line_active"] is False
