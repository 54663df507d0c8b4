"""Run every example (``examples/*/run.py``) and report one line per example; exit 1 if any fails.

Each example runs in its own process (this interpreter), from the repository root, with a time limit, no proxy and
no OpenAI key in its environment (the examples are offline: loopback servers on 127.0.0.1 only). An example passes
when it exits 0 within the limit. Lines, in name order::

    http: pass (3.9 s)
    mcp-client: FAIL (exit 1, 2.1 s)
        ...the last lines of its output...
    5/6 examples passed

Usage: ``scripts/check-examples [--examples DIR] [--timeout SECONDS] [--jobs N] [NAME ...]`` (names: only those
examples). ``TAUSIM_EXAMPLES=DIR`` sets the folder too (default: ``examples/`` of this checkout).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAIL_LINES = 15
"""Lines of a failed example's output shown under its line."""


@dataclass(frozen=True)
class Outcome:
    """One example's run: its name, whether it passed, why not, seconds taken and its output."""

    name: str
    passed: bool
    why: str
    seconds: float
    output: str


def discover(folder: Path, names: list[str]) -> list[Path]:
    """Return the ``run.py`` of every example folder under ``folder``, sorted by name (only ``names`` if given).

    Raises:
        SystemExit: a name given is not an example there.
    """
    found = {p.parent.name: p for p in sorted(folder.glob("*/run.py"))}
    unknown = [n for n in names if n not in found]
    if unknown:
        raise SystemExit(f"check-examples: no example {', '.join(unknown)} in {folder} "
                         f"(examples: {', '.join(found) or 'none'})")
    return [found[n] for n in sorted(found) if not names or n in names]


def run_example(script: Path, timeout: float) -> Outcome:
    """Run one example's ``run.py`` in a fresh process; it passes when it exits 0 within ``timeout`` seconds."""
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and k != "OPENAI_API_KEY"}
    env.update(NO_PROXY="127.0.0.1", LITELLM_LOCAL_MODEL_COST_MAP="True", PYTHONUNBUFFERED="1")
    t0 = time.perf_counter()
    try:
        res = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return Outcome(script.parent.name, False, f"timed out after {timeout:g} s", time.perf_counter() - t0, out)
    seconds = time.perf_counter() - t0
    output = res.stdout + res.stderr
    if res.returncode != 0:
        return Outcome(script.parent.name, False, f"exit {res.returncode}", seconds, output)
    return Outcome(script.parent.name, True, "", seconds, output)


def main(argv: list[str] | None = None) -> int:
    """Run the examples; print one line each and a total; return 0 when all passed, else 1."""
    parser = argparse.ArgumentParser(prog="check-examples", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only these examples (folder names)")
    parser.add_argument("--examples", type=Path, default=Path(os.environ.get("TAUSIM_EXAMPLES", ROOT / "examples")),
                        help="the folder of examples (default: examples/, or $TAUSIM_EXAMPLES)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds each example may take (default 120)")
    parser.add_argument("--jobs", type=int, default=2, help="examples run at once (default 2)")
    args = parser.parse_args(argv)
    scripts = discover(args.examples, args.names)
    if not scripts:
        print(f"check-examples: no examples (*/run.py) in {args.examples}")
        return 1
    passed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_example, s, args.timeout) for s in scripts]
        for fut in futures:  # in name order, each as soon as it is done
            o = fut.result()
            passed += o.passed
            verdict = "pass (" if o.passed else f"FAIL ({o.why}, "
            print(f"{o.name}: {verdict}{o.seconds:.1f} s)", flush=True)
            if not o.passed:
                for line in o.output.rstrip().splitlines()[-TAIL_LINES:]:
                    print(f"    {line}")
    print(f"{passed}/{len(scripts)} examples passed")
    return 0 if passed == len(scripts) else 1


if __name__ == "__main__":
    sys.exit(main())
