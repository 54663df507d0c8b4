"""The domain base class of data sets kept as a folder of JSON files with a ``policy.md`` beside it."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from sqlalchemy import MetaData
from sqlalchemy.orm import Session

from simulator.errors import DomainError
from simulator.world.data.loading import is_tau2_data
from simulator.world.data.merge import deep_merge
from simulator.world.database import StateSpec, TrialDatabase
from simulator.world.domain import Domain
from simulator.world.tools import Toolbox

__all__ = ["JsonFolderDomain"]


class JsonFolderDomain(Domain):
    """A domain whose native data is a folder of ``{key: record}`` JSON files, with a ``policy.md``.

    Subclasses set :attr:`name`, :attr:`option_values`, :attr:`metadata` (the schema), :attr:`policy_placeholder`
    and the loader/dumper/toolbox functions; the state compares money at cent precision and ignores the
    ``layout`` columns, which only record key order (JSON equality, and the peer's grader, ignore it: an agent
    that rewrites an address with its current value must not fail the state check).
    """

    metadata: ClassVar[MetaData]
    """The domain's schema."""
    template_cacheable: ClassVar[bool] = True
    """The template is built from the data folder's JSON files only (see :attr:`Domain.template_cacheable`)."""
    policy_placeholder: ClassVar[str] = ""
    """The policy returned while ``policy.md`` is absent."""

    @staticmethod
    def load_folder(session: Session, folder: Path) -> None:
        """Insert the data folder's records into an empty database (raises DomainError on malformed input)."""
        raise NotImplementedError

    tables: ClassVar[tuple[str, ...]] = ()
    """The data set's tables, in file order (``users``, ``orders``, ``products``)."""

    @staticmethod
    def load_tables(session: Session, tables: Mapping[str, tuple[Path, dict[str, Any]]]) -> None:
        """Insert already read tables (``{table: (source, records)}``) into an empty database."""
        raise NotImplementedError

    @staticmethod
    def dump_all(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
        """Return the database as the nested JSON of the data files."""
        raise NotImplementedError

    @staticmethod
    def make_toolbox(mode: str) -> Toolbox:
        """Build the domain's toolbox for a tool mode."""
        raise NotImplementedError

    tau2_options: ClassVar[dict[str, Any] | None] = {"mode": "tau2"}  # type: ignore[misc]
    """tau2-bench tasks run in tool mode ``tau2``."""

    def __init__(self) -> None:
        super().__init__()
        self._toolboxes: dict[str, Toolbox] = {}
        md = self.metadata
        self._spec = StateSpec(
            md,
            volatile_columns={t.name: frozenset({"layout"}) for t in md.sorted_tables if "layout" in t.c},
            float_decimals=2,
        )
        self._toolbox = self.make_toolbox(self.default_options(None).get("mode", ""))

    def state_spec(self) -> StateSpec:
        """Return the schema and comparison rules (money at cent precision, key order ignored)."""
        return self._spec

    def toolbox(self) -> Toolbox:
        """Return the domain's tools (those of the built-in data set's mode)."""
        return self._toolbox

    def toolbox_for(self, options: Mapping[str, Any]) -> Toolbox:
        """Return the tools of the options' tool mode (mode ``tau2`` has tau2-bench's tool set)."""
        mode = str(options.get("mode", ""))
        if mode != "tau2":
            return self._toolbox
        if mode not in self._toolboxes:
            self._toolboxes[mode] = self.make_toolbox(mode)
        return self._toolboxes[mode]

    def default_options(self, data_dir: Path | None) -> dict[str, Any]:
        """Return the tool options for a data set.

        ``{"mode": "tau2", "communicate": "tausim"}`` for tau2-bench data (a ``db.json``), else
        :meth:`legacy_options`.
        """
        if is_tau2_data(data_dir):
            return {"mode": "tau2", "communicate": "tausim"}
        return self.legacy_options(data_dir)

    def legacy_options(self, data_dir: Path | None) -> dict[str, Any]:
        """Return the options for the built-in data set (None) or a tau-bench data folder."""
        return {}

    def policy_for(self, data_dir: Path | None, options: Mapping[str, Any]) -> str:
        """Return the policy of the suite the data belongs to, else :meth:`policy`.

        tau2-bench data: the ``policy.md`` next to ``db.json``. Other data given with ``--data`` (tau-bench's
        ``retail/data`` folder): the suite's ``wiki.md`` or ``policy.md`` in that folder or its parent, where
        tau-bench keeps it; none there (or the built-in data set): :meth:`policy`.

        Raises:
            DomainError: tau2 data without a ``policy.md`` beside it.
        """
        if not is_tau2_data(data_dir):
            if data_dir is not None and Path(data_dir).resolve() != self.default_data_dir().resolve():
                folder = Path(data_dir)
                for candidate in (folder / "wiki.md", folder / "policy.md", folder.parent / "wiki.md",
                                  folder.parent / "policy.md"):
                    if candidate.is_file():
                        return candidate.read_text(encoding="utf-8")
            return self.policy()
        assert data_dir is not None
        folder = Path(data_dir) if Path(data_dir).is_dir() else Path(data_dir).parent
        path = folder / "policy.md"
        try:
            return path.read_text(encoding="utf-8")
        except OSError as e:
            raise DomainError(f"{path}: cannot read the suite's policy: {e.strerror or e}") from e

    def policy(self) -> str:
        """Return the policy (the package's policy.md), or :attr:`policy_placeholder` while it is absent."""
        path = self.package_dir() / "policy.md"
        if path.is_file():
            return path.read_text(encoding="utf-8")
        return self.policy_placeholder

    def populate(self, session: Session, data_dir: Path, options: Mapping[str, Any]) -> None:
        """Load the data files from ``data_dir``.

        Args:
            session: a Session on an empty database with the domain's schema.
            data_dir: the data folder.
            options: tool options (unused: loading is the same in every mode).

        Raises:
            DomainError: a file is missing or malformed (the message names file, record and field).
        """
        self.load_folder(session, Path(data_dir))

    def dump(self, trial: TrialDatabase) -> dict[str, dict[str, Any]]:
        """Return ``{file name without .json: {key: record}}`` as in the data files."""
        return self.dump_all(trial.raw)

    def merge_data(self, trial: TrialDatabase, data: Mapping[str, Any]) -> None:
        """Deep-merge native data into a trial database (tau2 ``initialization_data.agent_data``).

        Dump, merge (objects key by key, other values replaced), reload the domain's tables.

        Raises:
            DomainError: an unknown table, or a merged record that is malformed (names the record and field).
        """
        unknown = [k for k in data if k not in self.tables]
        if unknown:
            raise DomainError(f"initialization_data.agent_data: field {unknown[0]}: unknown table "
                              f"(tables: {', '.join(self.tables)})")
        merged = deep_merge(self.dump(trial), data)
        session = trial.session
        with session.begin():
            conn = session.connection()
            for table in reversed(self.metadata.sorted_tables):
                conn.execute(table.delete())
            self.load_tables(session, {n: (Path(f"initialization_data.agent_data#{n}"), merged[n])
                                       for n in self.tables})

