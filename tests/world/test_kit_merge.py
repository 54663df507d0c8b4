"""The kit's one deep merge (tau2's merge of initialization data): objects key by key, anything else replaced."""

from simulator.world.kit import deep_merge


def test_objects_merge_key_by_key_and_other_values_are_replaced():
    base = {"sim": {"status": "active", "pin": "1234"}, "apps": ["mail"], "n": 1}
    patch = {"sim": {"status": "locked"}, "apps": ["maps"], "extra": {"a": 1}}
    assert deep_merge(base, patch) == {"sim": {"status": "locked", "pin": "1234"}, "apps": ["maps"], "n": 1,
                                       "extra": {"a": 1}}
    assert base == {"sim": {"status": "active", "pin": "1234"}, "apps": ["mail"], "n": 1}  # not changed


def test_an_object_over_a_scalar_or_a_scalar_over_an_object_replaces_it():
    assert deep_merge({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}
    assert deep_merge({"a": {"b": 2}}, {"a": None}) == {"a": None}
    assert deep_merge([1, 2], {"a": 1}) == {"a": 1}
    assert deep_merge({"a": 1}, [3]) == [3]
