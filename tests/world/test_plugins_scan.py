"""The installed packages' entry points are read once per state of the import path, and seen again when it changes."""

import sys

from simulator.world import plugins


def test_one_scan_serves_every_group_until_the_import_path_changes(monkeypatch, tmp_path):
    calls = []
    real = plugins.entry_points

    def counting(**kw):
        calls.append(kw)
        return real(**kw)

    monkeypatch.setattr(plugins, "entry_points", counting)
    plugins._scan.cache_clear()
    try:
        names = {g: [ep.name for ep in plugins.group_entry_points(group=g)]
                 for g in ("tausim.domains", "tausim.agents", "tausim.users")}
        plugins.group_entry_points(group="tausim.domains")
        assert len(calls) == 1 and "retail" in names["tausim.domains"] and "oracle" in names["tausim.agents"]
        info = tmp_path / "late_plugin-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: late-plugin\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text("[tausim.domains]\nlate = late_plugin:Domain\n")
        monkeypatch.syspath_prepend(str(tmp_path))
        assert "late" in [ep.name for ep in plugins.group_entry_points(group="tausim.domains")]
        assert len(calls) == 2
        monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
        assert "late" not in [ep.name for ep in plugins.group_entry_points(group="tausim.domains")]
    finally:
        plugins._scan.cache_clear()
