"""The tausim pytest plugin (entry point ``pytest11``): test an agent with tausim from a team's own test suite.

The fixture ``tausim`` runs a run in-process and returns a :class:`TausimResult`::

    from simulator.interop.pytest_plugin import assert_pass_hat

    def test_my_agent(tausim):
        result = tausim.run(domain="retail", agent="py:my_agent:build", user="rule", trials=4,
                            task_ids=["cancel-no-longer-needed"])
        assert_pass_hat(result, 1, 0.75)   # pass^1 of the suite (the mean over task cells) at least 0.75

``tausim.run(**fields)`` takes the fields of :class:`~simulator.types.spec.RunSpec` (``domain``, ``agent``, ``user``,
``trials``, ``task_ids``, ``seed``, ``personas``, ...); shipped personas may be named (``personas=["impatient"]``)
without their definitions. With ``pytest --tausim-out DIR`` each run's document (the JSON ``tausim run --out``
writes) is kept in ``DIR``, named after the test. On failure :func:`assert_pass_hat` lists the failing task cells,
each failed trial with its termination reason, state differences and failed assertions.

Every pytest session of an environment where tausim is installed loads this module: it imports only pytest and the
standard library at import time; the engine is imported when a run starts. Collection needs no API key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from simulator.types.results import RunResult, TrialResult

__all__ = ["Tausim", "TausimResult", "assert_pass_hat", "failure_report", "tausim"]

MAX_DIFFS = 5
"""State differences listed per failed trial."""


class TausimResult:
    """A finished run, as the ``tausim`` fixture returns it.

    Attributes:
        run: the :class:`~simulator.types.results.RunResult`.
        document: the run document (``tausim run --out``'s JSON, :func:`simulator.storage.documents.run_summary_json`).
        path: where the document was kept (``--tausim-out``), or None.
    """

    def __init__(self, run: RunResult, document: dict[str, Any], path: Path | None = None) -> None:
        self.run = run
        self.document = document
        self.path = path

    @property
    def trials(self) -> list[TrialResult]:
        """The run's trials (task, persona, then trial order)."""
        return list(self.run.trials)

    def _reliability(self, k: int) -> Any:
        from simulator.stats.estimators import reliability

        spec = self.run.config
        task_ids = self.document.get("planned_task_ids") or list(dict.fromkeys(t.task_id for t in self.run.trials))
        return reliability([t.model_dump(include={"task_id", "persona", "trial", "passed"}) for t in self.run.trials],
                           task_ids, spec.trials, personas=list(spec.personas or []), incomplete="count", ks=[k])

    def pass_hat(self, k: int) -> float:
        """Return the suite's pass^k: the mean over task cells of ``C(c, k) / C(n, k)`` (n planned trials per cell).

        A planned trial that did not finish counts as failed. Raises ValueError for ``k`` above the planned trials.
        """
        return float(self._reliability(k).suite[f"pass^{k}"])

    def pass_at(self, k: int) -> float:
        """Return the suite's pass@k: the mean over task cells of ``1 - C(n - c, k) / C(n, k)``."""
        return float(self._reliability(k).suite[f"pass@{k}"])

    def cells(self, k: int = 1) -> dict[str, float]:
        """Return each task cell's pass^k (cell ``TASK`` or ``TASK@PERSONA``)."""
        return {cell: float(v[f"pass^{k}"]) for cell, v in self._reliability(k).per_cell.items()}

    def failing_cells(self) -> dict[str, list[TrialResult]]:
        """Return the task cells with at least one failed trial: cell -> its failed trials."""
        from simulator.stats.estimators import cell_id

        personas = bool(self.run.config.personas)
        out: dict[str, list[TrialResult]] = {}
        for t in self.run.trials:
            if not t.passed:
                out.setdefault(cell_id(t.task_id, t.persona if personas else None), []).append(t)
        return out

    def __repr__(self) -> str:
        passed = sum(t.passed for t in self.run.trials)
        return f"<TausimResult {self.run.config.domain}: {passed}/{len(self.run.trials)} trials passed>"


def _value(v: Any) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def trial_lines(trial: TrialResult) -> list[str]:
    """Describe one failed trial: ``trial I: REASON; FAILURES``, then its state differences and failed assertions.

    Args:
        trial: the trial.

    Returns:
        Plain-text lines, indented by four spaces.
    """
    g = trial.grade
    lines = [f"    trial {trial.trial}: {trial.termination_reason}; "
             f"{(g.failure if g is not None else None) or ('not graded' if g is None else 'failed')}"]
    if trial.error:
        last = [ln for ln in trial.error.strip().splitlines() if ln.strip()]
        lines.append(f"        error: {last[-1] if last else trial.error}")
    if g is None:
        return lines
    for d in g.state.differences[:MAX_DIFFS]:
        lines.append(f"        state: {d.get('table')}{d.get('key')}.{d.get('field')}: expected "
                     f"{_value(d.get('expected'))}, got {_value(d.get('actual'))}")
    if len(g.state.differences) > MAX_DIFFS:
        lines.append(f"        state: ... and {len(g.state.differences) - MAX_DIFFS} more differences")
    for kind in ("added", "removed"):
        for r in getattr(g.state, kind)[:3]:
            lines.append(f"        state: row {kind} {r.get('table')}{r.get('key')}")
    missing = g.outputs.get("missing") if isinstance(g.outputs, Mapping) else None
    if missing:
        lines.append(f"        missing outputs: {missing}")
    lines.extend(f"        process: {v}" for v in g.process.violations)
    checks = g.assertions
    for r in (checks.results if checks is not None else []):
        if not r.passed:
            note = f"; note: {r.note}" if r.note else ""
            lines.append(f"        assertion #{r.index} {r.type}: {r.summary}{note} (expected {_value(r.expected)}, "
                         f"actual {_value(r.actual)})")
    return lines


def failure_report(result: TausimResult) -> str:
    """Return the failing task cells of a run, each with its failed trials (see :func:`trial_lines`).

    Returns:
        One paragraph per failing cell: ``task CELL: C of N trials passed``, then its trials' lines; ``""`` when
        every trial passed.
    """
    n = result.run.config.trials
    failing = result.failing_cells()
    passed: dict[str, int] = {}
    for cell, trials in failing.items():
        passed[cell] = n - len(trials)
    lines: list[str] = []
    for cell, trials in failing.items():
        lines.append(f"  task {cell}: {passed[cell]} of {n} trials passed")
        for t in trials:
            lines.extend(trial_lines(t))
    return "\n".join(lines)


def assert_pass_hat(result: TausimResult, k: int, at_least: float) -> None:
    """Assert that a run's pass^k is at least ``at_least``.

    Args:
        result: the run (:meth:`Tausim.run`).
        k: the k of pass^k (at most the planned trials per task).
        at_least: the floor, between 0 and 1.

    Raises:
        AssertionError: pass^k is below the floor; the message gives the value and the failing task cells with their
            failed trials' state differences and failed assertions.
        ValueError: ``k`` is above the planned trials per task, or ``at_least`` is outside 0..1.
    """
    if not 0.0 <= at_least <= 1.0:
        raise ValueError(f"at_least must be between 0 and 1, got {at_least}")
    value = result.pass_hat(k)
    if value + 1e-12 >= at_least:
        return
    cells = result.failing_cells()
    where = f"; the run document is {result.path}" if result.path is not None else ""
    raise AssertionError(f"pass^{k} = {value:.4f} < {at_least} ({result.run.config.domain}, agent "
                         f"{result.run.config.agent.name}, {len(cells)} failing task cells){where}\n"
                         + failure_report(result))


def _persona_defs(fields: dict[str, Any]) -> None:
    """Give ``fields`` the definitions of the shipped personas it names (``personas`` without ``persona_defs``)."""
    names = fields.get("personas")
    if not names or fields.get("persona_defs") is not None:
        return
    import importlib

    # the shipped persona files are read by the personas package (a wall keeps the engine from importing it
    # statically: only faces load persona files, and this fixture is one)
    loader = importlib.import_module("personas")
    loaded = loader.load_personas(list(names))
    fields["personas"] = [p.name for p in loaded]
    fields["persona_defs"] = {p.name: p.model_dump(mode="json") for p in loaded}


class Tausim:
    """The ``tausim`` fixture: runs tausim runs in-process for one test.

    Args:
        out_dir: where to keep each run document (``--tausim-out``), or None.
        name: the test's name (the documents' file names).
    """

    assert_pass_hat = staticmethod(assert_pass_hat)

    def __init__(self, out_dir: Path | None = None, name: str = "run") -> None:
        self.out_dir = out_dir
        self.name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "run"
        self.results: list[TausimResult] = []

    def run(self, **fields: Any) -> TausimResult:
        """Run a run in-process: ``RunSpec(**fields)``, :func:`simulator.build_runner`, then its trials.

        Args:
            **fields: the :class:`~simulator.types.spec.RunSpec` fields, e.g. ``domain="retail", agent="oracle",
                user="rule", trials=2, task_ids=[...], personas=["impatient"]``.

        Returns:
            The :class:`TausimResult` (its document also written to ``--tausim-out`` when given).

        Raises:
            pydantic.ValidationError: a field is unknown or invalid.
            ValueError: see :func:`simulator.execution.build.build_runner`.
            SetupError: the pre-flight found the run cannot work (unreachable endpoint, missing key, a factory
                that raises); ``preflight=False`` skips it.
        """
        from simulator.execution.build import build_runner
        from simulator.execution.preflight import preflight
        from simulator.execution.recording import document_json
        from simulator.storage.documents import run_summary_json
        from simulator.types.spec import RunSpec

        fields = dict(fields)
        _persona_defs(fields)
        spec = RunSpec.model_validate(fields)
        runner = build_runner(spec)
        try:
            if spec.preflight:  # as `tausim run`: an unreachable endpoint stops here, once, not in every trial
                preflight(runner)
            run = runner.run()
        finally:
            runner.services.close()  # type: ignore[attr-defined]
        doc = run_summary_json(run, {"planned_task_ids": [t.id for t in runner.tasks],
                                     "task_tags": {t.id: list(t.tags) for t in runner.tasks}})
        path = None
        if self.out_dir is not None:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            path = self.out_dir / f"{self.name}-{len(self.results) + 1}.json"
            path.write_text(document_json(doc), encoding="utf-8")  # the layout of `tausim run --out`
        result = TausimResult(run, doc, path)
        self.results.append(result)
        return result


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--tausim-out DIR`` (keep each run document of the ``tausim`` fixture in DIR)."""
    group = parser.getgroup("tausim", "tausim agent runs")
    group.addoption("--tausim-out", metavar="DIR", default=None,
                    help="keep the run document (the JSON of `tausim run --out`) of each tausim fixture run in DIR")


@pytest.fixture
def tausim(request: pytest.FixtureRequest) -> Tausim:
    """Run tausim runs in-process: ``tausim.run(domain=..., agent=..., user=..., trials=..., task_ids=[...])``."""
    out = request.config.getoption("--tausim-out", default=None)
    return Tausim(Path(out) if out else None, request.node.name)
