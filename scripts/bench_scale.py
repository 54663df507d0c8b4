"""Benchmark (scale): provisioning, execution, grading and peak RSS at 1x/10x/50x of the peer retail data.

The peer retail data is replicated ``k`` times: the original records keep their ids (so every task still replays)
and each replica gets new user, order, product and item ids and a distinct email, appended after the originals.
Each scale runs in its own process (peak RSS is per process). Per task of the test split, once each: provisioning
(open the trial database + apply the fixture + close), execution (the gold actions through the tools) and grading
(the trial's final state against the prepared goal state); then the 115-task oracle run (one trial per task)
through :class:`simulator.execution.runner.Runner`. Prints figures, asserts nothing.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _bench import ROOT, machine, parser, retail_peer


def replicate(src: Path, dst: Path, k: int) -> int:
    """Write the retail data ``k`` times over into ``dst`` (originals first, replicas with new ids); return records."""
    users = json.loads((src / "users.json").read_text())
    orders = json.loads((src / "orders.json").read_text())
    products = json.loads((src / "products.json").read_text())
    out_u, out_o, out_p = dict(users), dict(orders), dict(products)
    for r in range(1, k):
        def item(i: str, r: int = r) -> str:
            return f"{i}{r:03d}"
        for pid, p in products.items():
            q = json.loads(json.dumps(p))
            q["product_id"] = item(pid)
            q["variants"] = {item(iid): {**v, "item_id": item(iid)} for iid, v in p["variants"].items()}
            out_p[item(pid)] = q
        for uid, u in users.items():
            v = json.loads(json.dumps(u))
            v["email"] = f"r{r}.{u['email']}"
            v["orders"] = [f"{o}-{r}" for o in u["orders"]]
            out_u[f"{uid}_r{r}"] = v
        for oid, o in orders.items():
            w = json.loads(json.dumps(o))
            w["order_id"] = f"{oid}-{r}"
            w["user_id"] = f"{o['user_id']}_r{r}"
            for it in w["items"]:
                it["product_id"], it["item_id"] = item(it["product_id"]), item(it["item_id"])
            for f in w["fulfillments"]:
                f["item_ids"] = [item(i) for i in f["item_ids"]]
            out_o[f"{oid}-{r}"] = w
    dst.mkdir(parents=True, exist_ok=True)
    for name, data in (("users", out_u), ("orders", out_o), ("products", out_p)):
        (dst / f"{name}.json").write_text(json.dumps(data))
    return len(out_u) + len(out_o) + len(out_p)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one_scale(data: Path, tasks_file: Path, k: int) -> dict[str, Any]:
    """Measure one scale in this process; return the figures."""
    import gc

    from simulator.agents import agent_factory
    from simulator.execution.prepare import prepare_tasks
    from simulator.execution.runner import Runner
    from simulator.types.spec import RunSpec
    from simulator.users import user_factory
    from simulator.world.database import diff_against
    from simulator.world.domain import get_domain
    from simulator.world.replay import apply_actions, prepare_trial

    dom = get_domain("retail")
    t0 = time.perf_counter()
    template = dom.template(data, dom.default_options(data))
    build = time.perf_counter() - t0
    rss_build = rss_mib()
    tasks = dom.load_tasks(str(tasks_file))
    spec = dom.state_spec()
    tables = [t.name for t in spec.tables()]
    with template.trial() as db:
        rows = sum(db.raw.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables)
    t0 = time.perf_counter()
    prepared = prepare_tasks(dom, template, tasks)
    prep = time.perf_counter() - t0
    gc.collect()
    gc.freeze()  # as the runner does: the prepared tasks are not scanned again
    rss_prepared = rss_mib()
    toolbox = dom.toolbox()
    prov: list[float] = []
    exe: list[float] = []
    grade: list[float] = []
    for task in tasks:
        goal = prepared[task.id].gold.goal_state()
        s = time.perf_counter()
        cm = template.trial()
        db = cm.__enter__()
        try:
            prepare_trial(dom, db, task)
            p1 = time.perf_counter()
            apply_actions(toolbox, db, task.gold_actions, raise_on_bug=False)
            e1 = time.perf_counter()
            diff = diff_against(db.raw, goal, spec)
            g1 = time.perf_counter()
        finally:
            cm.__exit__(None, None, None)
        c1 = time.perf_counter()
        assert diff.equal, task.id
        prov.append((p1 - s) + (c1 - g1))
        exe.append(e1 - p1)
        grade.append(g1 - e1)
    config = RunSpec(domain="retail", agent="oracle", user="scripted", trials=1, concurrency=1)
    runner = Runner(dom, template, tasks, agent_factory("oracle"), user_factory("scripted"), config,
                    gold={t: p.gold for t, p in prepared.items()})
    t0 = time.perf_counter()
    result = runner.run()
    wall = time.perf_counter() - t0
    return {"scale": k, "rows": rows, "template_mb": len(getattr(template, "data", b"")) / 1e6, "build_s": build,
            "prepare_s": prep, "rss_build": rss_build, "rss_prepared": rss_prepared, "rss_peak": rss_mib(),
            "prov_ms": statistics.median(prov) * 1000, "exe_ms": statistics.median(exe) * 1000,
            "grade_ms": statistics.median(grade) * 1000, "prov_mean_ms": statistics.fmean(prov) * 1000,
            "grade_mean_ms": statistics.fmean(grade) * 1000, "run_s": wall,
            "passed": sum(t.passed for t in result.trials), "trials": len(result.trials)}


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--scales", default="1,10,50", help="replication factors (default: %(default)s)")
    p.add_argument("--split", default="test", help="peer task split (default: %(default)s)")
    p.add_argument("--child", nargs=3, metavar=("DATA", "TASKS", "K"), help=argparse_suppress())
    args = p.parse_args()
    if args.child:
        print(json.dumps(one_scale(Path(args.child[0]), Path(args.child[1]), int(args.child[2]))))
        return
    peer = retail_peer(args.peers)
    if peer is None:
        sys.exit(f"bench-scale: needs the peer retail data under {args.peers}/tau-bench/retail")
    tasks_file = peer / f"tasks_{args.split}.json"
    print(f"bench-scale: peer retail data x 1/10/50 ({args.split} split, oracle agent, 1 trial per task); "
          f"{machine()}")
    print(f"  {'scale':>5} {'rows':>8} {'tmpl MB':>8} {'build s':>8} {'prov ms':>8} {'exec ms':>8} {'grade ms':>8} "
          f"{'prov+grade':>10} {'run s':>6} {'RSS build':>9} {'RSS prep':>8} {'RSS peak':>8} passed")
    base: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        for k in (int(s) for s in args.scales.split(",")):
            data = Path(tmp) / f"x{k}"
            replicate(peer / "data", data, k)
            out = subprocess.run([sys.executable, __file__, "--child", str(data), str(tasks_file), str(k)],
                                 check=True, capture_output=True, text=True, cwd=ROOT)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            base = base or r
            pg = r["prov_ms"] + r["grade_ms"]
            print(f"  {k:>4}x {r['rows']:>8} {r['template_mb']:>8.1f} {r['build_s']:>8.2f} {r['prov_ms']:>8.3f} "
                  f"{r['exe_ms']:>8.3f} {r['grade_ms']:>8.3f} {pg:>10.3f} {r['run_s']:>6.2f} "
                  f"{r['rss_build']:>8.0f}M {r['rss_prepared']:>7.0f}M {r['rss_peak']:>7.0f}M "
                  f"{r['passed']}/{r['trials']}")
    print("  (per-trial figures are medians over the tasks; prov = open + fixture + close; RSS = process peak so far"
          " after the template build, after preparing the goals, and at the end of the oracle run)")


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
