"""Floor 6, tools: failure hunting.

Snapshot and fork trials, search from decision points, cluster failures by signature, shrink them and export
regression cases.
"""
