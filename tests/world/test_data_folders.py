"""A ``--data`` folder that is not the domain's: the error says what a data folder of the domain holds."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from tests._support.peers import TAU2, needs_tau2


@needs_tau2
def test_data_folder_of_another_domain_says_what_the_domain_needs():
    """It said only ``telecom/users.json: cannot read retail data file`` (true, but db.json is what tau2 needs)."""
    res = CliRunner().invoke(app, ["run", "--domain", "retail", "--data", str(TAU2 / "telecom"), "--tasks",
                                   str(TAU2 / "retail" / "tasks.json"), "--agent", "oracle", "--no-progress"])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert f"--data {TAU2 / 'telecom'}: not a data folder of domain 'retail', which " \
        "holds either a tau2-bench db.json (an object with the tables users, orders, products) or one JSON file per " \
        "table (users.json, orders.json, products.json" in text
    assert "this one holds db.toml," in text and "Traceback" not in text


def test_a_folder_missing_one_table_file_names_it_and_the_layouts(tmp_path):
    from simulator.world.domain import DomainError, get_domain

    dom = get_domain("airline")
    for name in ("users.json", "reservations.json"):
        (tmp_path / name).write_text((dom.default_data_dir() / name).read_text())
    with pytest.raises(DomainError, match=r"flights\.json: cannot read airline data file: .* \(a data folder of domain "
                                          r"'airline' holds either a tau2-bench db\.json .*\(users\.json, "
                                          r"reservations\.json, flights\.json: tausim's built-in layout"):
        dom.template(tmp_path)
