"""A placement's destinations through the inventory's label index are those a scan of every
Location finds, for any labels and selectors YAML can make."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksgitops.core.load.selectors import any_matches
from ksgitops.core.place.where import Candidates, Destination, Wec, destinations
from ksgitops.model import Obj, Origin

_key = st.sampled_from(["tier", "region", "env", "id"])
_value = st.one_of(st.sampled_from(["", "gold", "silver", "eu", "us", "1"]), st.just(1), st.just(["unhashable"]))
_labels = st.one_of(st.none(), st.just("not a map"), st.dictionaries(_key, _value, max_size=4))
_selector = st.one_of(
    st.none(), st.just({}), st.just("not a map"), st.just({"matchLabels": "not a map"}),
    st.fixed_dictionaries({}, optional={
        "matchLabels": st.dictionaries(_key, _value, max_size=2),
        "matchExpressions": st.lists(st.builds(
            lambda key, op, values: {"key": key, "operator": op, **({"values": values} if values else {})},
            _key, st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
            st.lists(_value, max_size=2)), max_size=2)}))


def _obj(kind: str, name: str, labels: object) -> Obj:
    metadata: dict[str, object] = {"name": name}
    if labels is not None:
        metadata["labels"] = labels
    return Obj("inv", {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": kind, "metadata": metadata},
               Origin("spaces/inv/wecs.yaml", 1))


def _fleet(label_sets: list[list[object]], same_names: bool = False) -> dict[str, Wec]:
    """`same_names`: a WEC's Locations share one name (one destination, reached through any of them)."""
    wecs = [Wec(_obj("SyncTarget", f"wec-{i}", None),
                tuple(_obj("Location", f"loc-{i}-{0 if same_names else j}", labels) for j, labels in enumerate(sets)))
            for i, sets in enumerate(label_sets)]
    return {wec.mailbox: wec for wec in wecs}


@settings(max_examples=300)
@given(st.one_of(st.none(), st.just("not a list"), st.lists(_selector, max_size=3)),
       st.lists(st.lists(_labels, max_size=2), max_size=8), st.booleans())
def test_the_index_finds_what_a_scan_of_every_location_finds(selectors: object, label_sets: list[list[object]],
                                                            same_names: bool) -> None:
    wecs = _fleet(label_sets, same_names)
    scanned = sorted({Destination(w.space, loc.name, w.name, w.uid) for w in wecs.values() for loc in w.locations
                      if isinstance(selectors, list) and any_matches(selectors, loc.labels)})
    spec = {"locationSelectors": selectors}
    assert destinations(spec, wecs, Candidates(wecs)) == scanned
    assert destinations(spec, wecs) == scanned


def test_a_selector_by_label_looks_only_at_locations_carrying_its_first_pair() -> None:
    wecs = _fleet([[{"id": f"w{i}", "env": "prod" if i % 10 == 0 else "dev"}] for i in range(100)])
    found = Candidates(wecs)
    assert len(found.narrowed([{"matchLabels": {"env": "prod"}}])) == 10
    assert len(found.narrowed([{"matchLabels": {"id": "w3"}}, {"matchLabels": {"id": "w4"}}])) == 2
    assert len(found.narrowed([{"matchLabels": {"env": "prod"}}, {"matchExpressions": []}])) == 100


def test_a_location_with_a_label_value_yaml_made_unhashable_is_still_found() -> None:
    wecs = _fleet([[{"id": ["a", "list"], "env": "prod"}], [{"env": "prod"}], [{"env": "dev"}]])
    spec = {"locationSelectors": [{"matchLabels": {"env": "prod"}}]}
    assert [d.location_name for d in destinations(spec, wecs, Candidates(wecs))] == ["loc-0-0", "loc-1-0"]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_a_sync_target_s_uid_is_uuid5_of_its_url_name(name: str) -> None:
    import uuid
    from ksgitops.core.place.where import _url_uuid
    try:
        expected = str(uuid.uuid5(uuid.NAMESPACE_URL, name))
    except UnicodeEncodeError:  # a lone surrogate: neither spells it
        with pytest.raises(UnicodeEncodeError):
            _url_uuid.__wrapped__(name)
        return
    assert _url_uuid.__wrapped__(name) == expected


def test_a_sync_target_with_a_label_value_yaml_made_unhashable_is_still_selected() -> None:
    """Such a label is an error of its own (validate); the Locations of its space still select."""
    from ksgitops.core.place.where import inventory
    targets = [_obj("SyncTarget", "a", {"id": "a", "odd": ["a", "list"]}), _obj("SyncTarget", "b", {"id": "b", "odd": {}})]
    locations = [_obj("Location", f"loc-{n}", None) for n in "ab"]
    for loc, n in zip(locations, "ab"):
        loc.body["spec"] = {"instanceSelector": {"matchLabels": {"id": n}}}
    wecs = inventory({"inv": [*targets, *locations]})
    assert {w.name: [loc.name for loc in w.locations] for w in wecs.values()} == {"a": ["loc-a"], "b": ["loc-b"]}
