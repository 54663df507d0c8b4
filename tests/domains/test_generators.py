"""The seeded data generators of the JSON-folder domains: what every one of them must guarantee."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from domains.airline import generate as airline_gen
from domains.retail import generate as retail_gen

GENERATORS: dict[str, tuple[ModuleType, dict[str, Any]]] = {
    "airline": (airline_gen, {"n_users": 5, "n_reservations": 8}),
    "retail": (retail_gen, {"n_users": 5, "n_orders": 10}),
}


@pytest.mark.parametrize("domain", list(GENERATORS))
def test_generation_does_not_touch_global_rngs(domain: str) -> None:
    import random

    import numpy as np

    gen, sizes = GENERATORS[domain]
    random.seed(123)
    np.random.seed(123)
    before = (random.random(), np.random.random())
    random.seed(123)
    np.random.seed(123)
    gen.generate(5, **sizes)
    assert (random.random(), np.random.random()) == before


@pytest.mark.parametrize("domain", list(GENERATORS))
def test_files_are_indented_json_sorted_by_id(domain: str) -> None:
    gen, _ = GENERATORS[domain]
    data_dir = Path(gen.__file__).parent / "data"
    for name in gen.DATA_FILES:
        text = (data_dir / name).read_text(encoding="utf-8")
        assert text.startswith('{\n  "') and text.endswith("}\n")
        keys = list(json.loads(text))
        assert keys == sorted(keys)
