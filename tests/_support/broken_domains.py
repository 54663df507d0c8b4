"""A tiny stock-room domain with a clock, and variants that break one rule each (for the check_domain tests)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Integer, String, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from simulator import Action, Domain, Task, Toolbox, ToolContext, ToolError, UserScenario, tool
from simulator.world.database import StateSpec, TrialDatabase
from simulator.world.kit import one_of
from simulator.world.sinks import Clock


class Base(DeclarativeBase):
    pass


class Item(Base):
    __tablename__ = "items"
    id: Mapped[str] = mapped_column(String, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    stock: Mapped[int] = mapped_column(Integer)


class Note(Base):
    __tablename__ = "notes"
    id: Mapped[str] = mapped_column(String, primary_key=True)
    item_id: Mapped[str] = mapped_column(String)
    text: Mapped[str] = mapped_column(String)
    at: Mapped[str] = mapped_column(String)


def _item(ctx: ToolContext, item_id: str) -> Item:
    item = ctx.session.get(Item, item_id)
    if item is None:
        raise ToolError(f"item {item_id} not found")
    return item


def _next_id(ctx: ToolContext) -> str:
    return f"N{(ctx.session.scalar(select(func.count()).select_from(Note)) or 0) + 1}"


@tool("read")
def get_item(ctx: ToolContext, item_id: str) -> dict[str, Any]:
    """Get an item's name and stock.

    Args:
        item_id: the item id, e.g. "I1".
    """
    item = _item(ctx, item_id)
    return {"id": item.id, "name": item.name, "stock": item.stock}


@tool("write")
def add_note(ctx: ToolContext, item_id: str, text: str) -> str:
    """Add a note to an item, stamped with the clock's time.

    Args:
        item_id: the item id.
        text: the note.
    """
    _item(ctx, item_id)
    nid = _next_id(ctx)
    ctx.session.add(Note(id=nid, item_id=item_id, text=text, at=Clock.now(ctx).isoformat()))
    return f"note {nid} added"


@tool("read")
def count_item(ctx: ToolContext, item_id: str) -> dict[str, Any]:
    """BROKEN: a read tool that writes (it 'recounts' the stock and stores it).

    Args:
        item_id: the item id.
    """
    item = _item(ctx, item_id)
    item.stock = item.stock + 1
    return {"id": item.id, "stock": item.stock}


@tool("write")
def stamp_note(ctx: ToolContext, item_id: str, text: str) -> str:
    """BROKEN: adds a note stamped with the wall clock.

    Args:
        item_id: the item id.
        text: the note.
    """
    _item(ctx, item_id)
    nid = _next_id(ctx)
    ctx.session.add(Note(id=nid, item_id=item_id, text=text, at=datetime.now().isoformat(timespec="seconds")))
    return f"note {nid} added"


@tool("write")
def ticket_note(ctx: ToolContext, item_id: str, text: str) -> str:
    """BROKEN: adds a note under a random id.

    Args:
        item_id: the item id.
        text: the note.
    """
    _item(ctx, item_id)
    nid = uuid.uuid4().hex[:8]
    ctx.session.add(Note(id=nid, item_id=item_id, text=text, at=Clock.now(ctx).isoformat()))
    return f"note {nid} added"


@tool("read", memo=True)
def item_seen_at(ctx: ToolContext, item_id: str) -> str:
    """BROKEN: a read tool declared memo=True that reads the wall clock.

    Args:
        item_id: the item id.
    """
    return f"{_item(ctx, item_id).name} seen at {datetime.now().isoformat()}"


POLICY = ("# Stock room policy\n\n" + "You help staff of a small stock room. Look the item up before acting, add notes "
          "only when asked, never change stock counts, and say what you did in one sentence. " * 6)


class StockDomain(Domain):
    """The well-behaved stock room: get_item (read) and add_note (write, clock-stamped)."""

    name = "stock"
    sinks = (Clock("2024-06-01T09:00:00"),)
    entities = {"item_id": ("items", "id")}  # noqa: RUF012
    extra_tools: tuple[Any, ...] = ()
    note_tool = "add_note"

    def state_spec(self) -> StateSpec:
        return StateSpec(Base.metadata)

    def toolbox(self) -> Toolbox:
        return Toolbox([get_item, add_note, *self.extra_tools])

    def policy(self) -> str:
        return POLICY

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        items = json.loads((data_dir / "items.json").read_text())
        session.add_all([Item(**r) for r in items.values()])

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        items = trial.raw.execute("SELECT id, name, stock FROM items ORDER BY id").fetchall()
        notes = trial.raw.execute("SELECT id, item_id, text, at FROM notes ORDER BY id").fetchall()
        return {"items": {r[0]: {"id": r[0], "name": r[1], "stock": r[2]} for r in items},
                "notes": {r[0]: {"id": r[0], "item_id": r[1], "text": r[2], "at": r[3]} for r in notes}}

    def tasks(self) -> list[Task]:
        """Two tasks adding a note through the domain's note tool."""
        return [
            Task(id=f"note-{i}", scenario=UserScenario(instructions=f"Add the note '{text}' to item {item}."),
                 gold_actions=[Action(name="get_item", arguments={"item_id": item}),
                               Action(name=self.note_tool, arguments={"item_id": item, "text": text})])
            for i, (item, text) in enumerate([("I1", "fragile"), ("I2", "reorder soon")], start=1)
        ]


class ReadWritesDomain(StockDomain):
    """Has a read tool that writes."""

    extra_tools = (count_item,)


class WallClockDomain(StockDomain):
    """Its note tool stamps the wall clock."""

    extra_tools = (stamp_note,)
    note_tool = "stamp_note"


class MemoClockDomain(StockDomain):
    """Has a read tool declared memo=True that reads the wall clock."""

    extra_tools = (item_seen_at,)


class RandomIdDomain(StockDomain):
    """Its note tool makes a random id."""

    extra_tools = (ticket_note,)
    note_tool = "ticket_note"


class GradedBase(DeclarativeBase):
    pass


class GradedItem(GradedBase):
    """An item with an optional grade, declared to be 1, 2 or 3."""

    __tablename__ = "items"
    id: Mapped[str] = mapped_column(String, primary_key=True)
    name: Mapped[str] = mapped_column(String)
    stock: Mapped[int] = mapped_column(Integer)
    grade: Mapped[int | None] = mapped_column(Integer, info=one_of(1, 2, 3))


class GradedDomain(StockDomain):
    """The stock room whose items have a grade of declared values (its data may hold others)."""

    def state_spec(self) -> StateSpec:
        return StateSpec(GradedBase.metadata)

    def toolbox(self) -> Toolbox:
        return Toolbox([get_item])

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        items = json.loads((data_dir / "items.json").read_text())
        session.add_all([GradedItem(**r) for r in items.values()])

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        items = trial.raw.execute("SELECT id, name, stock, grade FROM items ORDER BY id").fetchall()
        return {"items": {r[0]: {"id": r[0], "name": r[1], "stock": r[2], "grade": r[3]} for r in items}}


def write_data(folder: Path, grades: Mapping[str, int | None] | None = None) -> Path:
    """Write the stock room's data set (items.json, an empty notes.json) and return the folder.

    ``grades``: item id -> grade, for :class:`GradedDomain`.
    """
    folder.mkdir(parents=True, exist_ok=True)
    items: dict[str, dict[str, Any]] = {"I1": {"id": "I1", "name": "vase", "stock": 3},
                                        "I2": {"id": "I2", "name": "lamp", "stock": 5}}
    for key, grade in (grades or {}).items():
        items[key]["grade"] = grade
    (folder / "items.json").write_text(json.dumps(items))
    (folder / "notes.json").write_text("{}")
    return folder
