"""A tiny bank domain used by the engine tests (independent of retail)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Float, ForeignKey, Integer, String, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from simulator.world.database import StateSpec, TrialDatabase
from simulator.world.domain import Domain
from simulator.world.tools import Toolbox, ToolContext, ToolError, tool


class Base(DeclarativeBase):
    pass


class Account(Base):
    __tablename__ = "accounts"
    id: Mapped[str] = mapped_column(String, primary_key=True)
    owner: Mapped[str] = mapped_column(String)
    balance: Mapped[float] = mapped_column(Float)


class Transfer(Base):
    __tablename__ = "transfers"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    src: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    dst: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    amount: Mapped[float] = mapped_column(Float)


@tool("read")
def get_balance(ctx: ToolContext, account_id: str) -> dict[str, Any]:
    """Return an account's balance.

    Args:
        account_id: the account id, e.g. "A1".
    """
    acct = ctx.session.get(Account, account_id)
    if acct is None:
        raise ToolError(f"account {account_id} not found")
    return {"id": acct.id, "balance": acct.balance}


@tool("write")
def transfer(ctx: ToolContext, src: str, dst: str, amount: float) -> str:
    """Move money between two accounts.

    Args:
        src: account to debit.
        dst: account to credit.
        amount: amount in USD, positive.
    """
    a, b = ctx.session.get(Account, src), ctx.session.get(Account, dst)
    if a is None or b is None:
        raise ToolError("unknown account")
    if amount <= 0:
        raise ToolError("amount must be positive")
    a.balance = round(a.balance - amount, 2)
    if a.balance < 0:
        raise ToolError("insufficient funds")  # raised after a change: dispatch must roll it back
    b.balance = round(b.balance + amount, 2)
    n = len(ctx.session.scalars(select(Transfer.id)).all())
    ctx.session.add(Transfer(id=n + 1, src=src, dst=dst, amount=amount))
    return "ok"


@tool("write")
def explode(ctx: ToolContext, account_id: str) -> str:
    """A buggy tool: changes state, then raises an unexpected exception.

    Args:
        account_id: any account id.
    """
    acct = ctx.session.get(Account, account_id)
    assert acct is not None
    acct.balance = 0.0
    ctx.session.flush()
    raise KeyError("bug")


@tool("write", ends_conversation=True)
def transfer_to_human(ctx: ToolContext, summary: str) -> str:
    """Hand the conversation to a human agent.

    Args:
        summary: what the user needs.
    """
    return "Transfer successful"


class BankDomain(Domain):
    name = "bank"

    def state_spec(self) -> StateSpec:
        return StateSpec(Base.metadata)

    def toolbox(self) -> Toolbox:
        return Toolbox([get_balance, transfer, explode, transfer_to_human])

    def policy(self) -> str:
        return "Be nice."

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        rows = json.loads((data_dir / "accounts.json").read_text())
        session.add_all([Account(**r) for r in rows])

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        rows = trial.raw.execute("SELECT id, owner, balance FROM accounts ORDER BY id").fetchall()
        return {"accounts": {r[0]: {"owner": r[1], "balance": r[2]} for r in rows}}


def write_data(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "accounts.json").write_text(json.dumps([
        {"id": "A1", "owner": "ann", "balance": 100.0},
        {"id": "B2", "owner": "bob", "balance": 25.0},
    ]))
    return folder
