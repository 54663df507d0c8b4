"""Private building blocks of the built-in domains (re-exported by :mod:`domains._common`)."""
