"""Benchmark (a): trial database provisioning, ms per trial, on the retail peer data (target <= 2 ms).

A trial's database is a private in-memory copy of the domain's template; this times opening that copy
(``TemplateDatabase.trial()``) and closing it, with and without a first query that touches every table.
"""

from __future__ import annotations

import statistics
import time

from _bench import machine, parser, retail


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=2000, help="trials to provision (default: %(default)s)")
    args = p.parse_args()
    t0 = time.perf_counter()
    dom, template, _, label = retail(args.peers)
    build = time.perf_counter() - t0
    tables = [t.name for t in dom.state_spec().tables()]
    with template.trial() as db:
        rows = sum(db.raw.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in tables)
    for _ in range(50):  # warm-up
        with template.trial():
            pass

    def run(touch: bool) -> list[float]:
        out = []
        for _ in range(args.n):
            s = time.perf_counter()
            with template.trial() as db:
                if touch:
                    raw = db.raw
                    for t in tables:
                        raw.execute(f'SELECT 1 FROM "{t}" LIMIT 1').fetchall()
            out.append(time.perf_counter() - s)
        return out

    print(f"bench-provisioning: {label}; {len(tables)} tables, {rows} rows, template "
          f"{len(template.data) / 1e6:.1f} MB; {machine()}")
    print(f"  template build (once per process): {build * 1000:.0f} ms")
    for touch, what in ((False, "open + close"), (True, "open + one query per table + close")):
        times = run(touch)
        ms = [t * 1000 for t in times]
        print(f"  {what:38s} mean {statistics.fmean(ms):.3f} ms/trial, median {statistics.median(ms):.3f}, "
              f"p95 {sorted(ms)[int(0.95 * len(ms))]:.3f}  (n={args.n}; target <= 2 ms)")


if __name__ == "__main__":
    main()
