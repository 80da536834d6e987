"""Destinations carried forward WEC by WEC (core/place/carried.py) are a full match's, whatever
changed in the inventory between two runs sharing one cache; and they are carried, not matched
again, when few WECs changed."""
from __future__ import annotations

import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from ksgitops.core.place import carried
from ksgitops.core.place.carried import WhereMemo, wec_prints
from ksgitops.core.place.where import Wec, destinations
from ksgitops.core.serialize import canonical_json
from ksgitops.model import Obj, Origin, object_digest

_labels = st.dictionaries(st.sampled_from(["tier", "env", "id"]), st.sampled_from(["gold", "silver", "eu", "1"]),
                          max_size=3)
_selectors = st.lists(st.one_of(
    st.builds(lambda labels: {"matchLabels": labels}, _labels),
    st.builds(lambda key, op: {"matchExpressions": [{"key": key, "operator": op}]},
              st.sampled_from(["tier", "env"]), st.sampled_from(["Exists", "DoesNotExist"]))), max_size=2)
# what happens to a WEC between the runs: kept, its Location's labels changed, a second Location
# added, its SyncTarget's uid changed, or the WEC removed
_fate = st.sampled_from(["kept", "kept", "kept", "labels", "second", "uid", "removed"])


def _obj(kind: str, name: str, labels: dict[str, str] | None = None, uid: str = "") -> Obj:
    metadata: dict[str, object] = {"name": name, **({"labels": labels} if labels else {}),
                                   **({"uid": uid} if uid else {})}
    return Obj("inv", {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": kind, "metadata": metadata},
               Origin("spaces/inv/wecs.yaml", 1))


def _wec(i: int, locations: list[dict[str, str]], uid: str = "") -> Wec:
    return Wec(_obj("SyncTarget", f"wec-{i}", uid=uid),
               tuple(_obj("Location", f"loc-{i}-{j}", labels) for j, labels in enumerate(locations)))


def _fleet(wecs: list[Wec]) -> dict[str, Wec]:
    return {wec.mailbox: wec for wec in sorted(wecs, key=lambda w: w.mailbox)}


def _run(cache: dict[object, object], wecs: dict[str, Wec], token: str,
         specs: list[dict[str, object]]) -> tuple[WhereMemo, list[tuple[object, ...]]]:
    memo = WhereMemo(cache, wecs, token, wec_prints(wecs))
    return memo, [memo.destinations(spec, canonical_json(spec["locationSelectors"])) for spec in specs]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_labels, _fate, _labels), min_size=1, max_size=12),
       st.lists(_labels, max_size=3), st.lists(_selectors, min_size=1, max_size=3))
def test_carried_destinations_are_a_full_match_s(wecs: list[tuple[dict[str, str], str, dict[str, str]]],
                                                 added: list[dict[str, str]], selectors: list[list[object]]) -> None:
    before = _fleet([_wec(i, [labels]) for i, (labels, _, _) in enumerate(wecs)])
    after_wecs = [_wec(len(wecs) + i, [labels]) for i, labels in enumerate(added)]
    for i, (labels, fate, other) in enumerate(wecs):
        if fate != "removed":
            after_wecs.append(_wec(i, {"kept": [labels], "labels": [other], "second": [labels, other],
                                       "uid": [labels]}[fate], uid="changed" if fate == "uid" else ""))
    after = _fleet(after_wecs)
    specs = [{"locationSelectors": s} for s in selectors]
    cache: dict[object, object] = {}
    _run(cache, before, "before", specs)
    cache = pickle.loads(pickle.dumps(cache))  # as the next process reads it
    memo, found = _run(cache, after, "after", specs)
    assert found == [tuple(destinations(spec, after)) for spec in specs]
    changed = sum(fate != "kept" for _, fate, _ in wecs) + len(added)
    if changed * 4 <= len(after):
        assert memo._candidates is None  # nothing matched in full


def test_one_location_changed_matches_only_its_wec_again(monkeypatch: object) -> None:
    before = _fleet([_wec(i, [{"tier": "gold" if i % 2 else "silver", "id": str(i)}]) for i in range(40)])
    after = dict(before)
    after[_wec(7, []).mailbox] = _wec(7, [{"tier": "silver", "id": "7"}])
    specs = [{"locationSelectors": [{"matchLabels": {"tier": tier}}]} for tier in ("gold", "silver")]
    cache: dict[object, object] = {}
    _run(cache, before, "before", specs)
    matched: list[int] = []
    real = carried.destinations

    def counting(spec: dict[str, object], wecs: dict[str, Wec], *rest: object) -> object:
        matched.append(len(wecs))
        return real(spec, wecs, *rest)  # type: ignore[arg-type]
    monkeypatch.setattr(carried, "destinations", counting)  # type: ignore[attr-defined]
    _, (gold, silver) = _run(cache, after, "after", specs)
    assert matched == [1, 1]
    assert "wec-7" not in {d.sync_target_name for d in gold} and "wec-7" in {d.sync_target_name for d in silver}
    assert len(gold) == 19 and len(silver) == 21


def test_prints_of_another_inventory_are_not_carried_from() -> None:
    """A placement last computed for inventory A, while the prints kept are B's: matched in full."""
    a = _fleet([_wec(i, [{"tier": "gold"}]) for i in range(8)])
    b = {**a, _wec(0, []).mailbox: _wec(0, [{"tier": "silver"}])}
    c = {**a, _wec(1, []).mailbox: _wec(1, [{"tier": "silver"}])}
    gold = {"locationSelectors": [{"matchLabels": {"tier": "gold"}}]}
    silver = {"locationSelectors": [{"matchLabels": {"tier": "silver"}}]}
    cache: dict[object, object] = {}
    _run(cache, a, "a", [gold])
    _run(cache, b, "b", [silver])  # the prints are b's now; gold's last inventory is a
    memo, (found,) = _run(cache, c, "c", [gold])
    assert found == tuple(destinations(gold, c)) and memo._candidates is not None


def test_an_object_s_digest_is_kept_with_it_and_follows_its_content() -> None:
    obj = _obj("Location", "l", {"tier": "gold"})
    digest = object_digest(obj)
    assert pickle.loads(pickle.dumps(obj)).digest == digest
    assert object_digest(_obj("Location", "l", {"tier": "silver"})) != digest
    assert object_digest(Obj("s", {1: "a"}, Origin("f"))) != object_digest(Obj("s", {"1": "a"}, Origin("f")))


def _st(name: str, labels: dict[str, str]) -> Obj:
    return _obj("SyncTarget", name, labels)


def _location(name: str, selector: object) -> Obj:
    obj = _obj("Location", name)
    obj.body["spec"] = {"instanceSelector": selector}
    return obj


_instance_selector = st.one_of(st.none(), st.builds(lambda labels: {"matchLabels": labels}, _labels),
                               st.just({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}))


@settings(max_examples=200, deadline=None)
@given(st.lists(_labels, min_size=1, max_size=6), st.lists(_instance_selector, min_size=1, max_size=6),
       st.lists(st.tuples(st.booleans(), st.integers(0, 5), _labels, _instance_selector), max_size=3))
def test_selections_kept_by_content_give_the_inventory_a_fresh_look_gives(
        targets: list[dict[str, str]], selectors: list[object],
        edits: list[tuple[bool, int, dict[str, str], object]]) -> None:
    from ksgitops.core.place.where import inventory
    objs = [_st(f"st-{i}", labels) for i, labels in enumerate(targets)] + \
        [_location(f"loc-{i}", sel) for i, sel in enumerate(selectors)]
    def shown(wecs: dict[str, Wec]) -> dict[str, tuple[object, ...]]:  # Obj compares by space alone
        return {mb: (w.sync_target.body, [loc.body for loc in w.locations]) for mb, w in wecs.items()}
    memo: dict[object, object] = {}
    assert shown(inventory({"inv": objs}, memo)) == shown(inventory({"inv": objs}))
    for edit_target, at, labels, selector in edits:  # one object changed at a time, as runs go
        if edit_target:
            at %= len(targets)
            objs = [_st(f"st-{at}", labels) if o.name == f"st-{at}" else o for o in objs]
        else:
            at %= len(selectors)
            objs = [_location(f"loc-{at}", selector) if o.name == f"loc-{at}" else o for o in objs]
        memo = pickle.loads(pickle.dumps(memo))
        assert shown(inventory({"inv": objs}, memo)) == shown(inventory({"inv": objs}))


def test_a_location_unchanged_among_unchanged_sync_targets_is_not_matched_again(monkeypatch: object) -> None:
    from ksgitops.core.place import where
    objs = [_st(f"st-{i}", {"id": str(i)}) for i in range(20)] + \
        [_location(f"loc-{i}", {"matchLabels": {"id": str(i)}}) for i in range(20)]
    memo: dict[object, object] = {}
    where.inventory({"inv": objs}, memo)
    objs[25] = _location("loc-5", {"matchLabels": {"id": "6"}})
    looked: list[str] = []
    real = where._selected_by

    def counting(location: Obj, *rest: object) -> object:
        looked.append(location.name)
        return real(location, *rest)  # type: ignore[arg-type]
    monkeypatch.setattr(where, "_selected_by", counting)  # type: ignore[attr-defined]
    wecs = where.inventory({"inv": objs}, memo)
    assert looked == ["loc-5"]
    assert [loc.name for loc in wecs["inv-mb-st-6"].locations] == ["loc-5", "loc-6"]
