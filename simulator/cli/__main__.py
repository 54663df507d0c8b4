"""``python -m simulator.cli``: the ``tausim`` command."""

from simulator.cli import main

main()
