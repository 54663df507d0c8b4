"""The ``tausim import`` command: a peer's results file (tau-bench, tau2) as a stored run that tausim can grade."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simulator.cli._common import connect_store, console, domain_options, fail
from simulator.errors import PeerResultsError, StoreError
from simulator.storage.store import DEFAULT_STORE_URL
from simulator.world.domain import DomainError, get_domain

__all__ = ["import_command"]


def import_command(
    file: Annotated[Path, typer.Argument(help="The peer's results file (JSON).")],
    format: Annotated[str, typer.Option("--format", help="tau-bench (its run.py output) or tau2 (tau2 run).")],
    domain: Annotated[str, typer.Option(help="The domain the conversations ran in.")],
    data: Annotated[Path | None, typer.Option(help="The data set they ran on (default: the built-in one).")] = None,
    tasks: Annotated[str | None, typer.Option(
        help="Task file or split they ran (default: the peer's test split next to --data, else the domain's).")
    ] = None,
    option: Annotated[list[str] | None, typer.Option(help="Domain option KEY=VALUE, e.g. mode=tau-bench.")] = None,
    store: Annotated[str, typer.Option(help="Results store URL.")] = DEFAULT_STORE_URL,
    run_id: Annotated[str | None, typer.Option(help="Id of the new run (default: a new one).")] = None,
) -> None:
    """Import a peer's results as a run: each conversation becomes a stored trial, ungraded.

    Messages, tool calls (with the status the peer observed) and the termination are kept, and the peer's
    reward as ``peer_reward``. Then `tausim regrade RUN_ID` grades every trial with tausim's layers and prints
    its agreement with the peer.
    """
    from simulator.interop.peer_results import default_peer_tasks, read_peer_results, record_imported

    try:
        dom = get_domain(domain)
        source = tasks if tasks is not None else default_peer_tasks(format, data)
        dom.load_tasks(source)  # the task source must load now, not at regrade time
        imported = read_peer_results(file, format, dom, data_dir=data, tasks=source,
                                     options=domain_options(dom, data, option))
    except (DomainError, PeerResultsError, ValueError) as e:
        raise fail(str(e)) from e
    results_store = connect_store(store)
    try:
        info = record_imported(results_store, imported, dom, run_id=run_id)
    except StoreError as e:
        raise fail(str(e)) from e
    finally:
        results_store.close()
    passed = sum(t.passed for t in imported.trials)
    console.print(f"imported {len(imported.trials)} conversations of {len(imported.task_ids)} tasks from {file} as "
                  f"run {info.run_id} ({passed} with peer reward 1); grade them with `tausim regrade {info.run_id} "
                  f"--store {store}`", highlight=False)
