"""The small records caches hold by the thousand pickle as their fields (Obj without the memos it
makes from its body): every field must come back, including one added later; a record that keeps a
memo compares every field but that one."""
from __future__ import annotations

import pickle

import msgspec
import pytest
from msgspec.structs import fields

from ksgitops.core.place.where import Destination, Wec
from ksgitops.core.status.markdown import MailboxSummary
from ksgitops.core.status.memo import StatusMemo
from ksgitops.model import Obj, ObjRef, Origin, Problem


@pytest.mark.parametrize("cls", [Origin, ObjRef, Destination, Obj, Problem, Wec])
def test_every_field_comes_back(cls) -> None:
    given = [f for f in fields(cls) if not f.name.startswith("_")]  # the others are made from these (Obj's kind, name)
    values = {f.name: (7 if f.type is int else f"{f.name}-value") for f in given}
    original = cls(**values)
    copy = pickle.loads(pickle.dumps(original, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(copy) is cls and copy == original
    assert {f.name: getattr(copy, f.name) for f in given} == values


def test_an_object_s_kind_and_name_come_back_from_its_body() -> None:
    obj = Obj("s", {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n"}},
              Origin("f", 1), "k")
    assert (obj.kind, obj.group, obj.name, obj.namespace) == ("Deployment", "apps", "d", "n")  # kept from here on
    copy = pickle.loads(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
    assert (copy.kind, copy.group, copy.name, copy.namespace, copy.ref) == ("Deployment", "apps", "d", "n", obj.ref)


def _wec(space: str, name: str, label: str) -> Wec:
    st = Obj(space, {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncTarget",
                     "metadata": {"name": name, "labels": {"id": name}}, "spec": {"n": 1.5, "big": 2 ** 53}},
             Origin(f"spaces/{space}/st.yaml", 3), "blob-st")
    loc = Obj(space, {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "Location",
                      "metadata": {"name": name, "labels": {"tier": label, "zeta": "z", "alpha": "a"}},
                      "spec": {"instanceSelector": {"matchLabels": {"id": name}}, "empty": None, "list": [True, 0]}},
              Origin(f"spaces/{space}/loc.yaml", 9), "blob-loc")
    return Wec(st, (loc, loc))


@pytest.mark.parametrize("label", ["gold", "g\udcffld"])  # the second is no UTF-8: pickled instead of JSON
def test_packed_wecs_come_back_whole_and_in_order(label: str) -> None:
    from ksgitops.core.results import JSON_MARK, PackedWecs
    wecs = {w.mailbox: w for w in (_wec("inv", "zed", label), _wec("inv", "abe", label), _wec("other", "abe", label))}
    packed = pickle.loads(pickle.dumps(PackedWecs.of(wecs)))
    assert packed._packed.startswith(JSON_MARK) == (label == "gold")
    assert len(packed) == 3 and list(packed) == list(wecs)
    for mailbox, wec in wecs.items():
        back = packed[mailbox]
        for got, want in zip((back.sync_target, *back.locations), (wec.sync_target, *wec.locations)):
            assert (got.space, got.body, got.origin, got.key) == (want.space, want.body, want.origin, want.key)
            assert list(got.body["metadata"]["labels"]) == list(want.body["metadata"]["labels"])  # key order kept


@pytest.mark.parametrize("cls, memo", [(MailboxSummary, "_line"), (StatusMemo, "fetch")])
def test_records_that_keep_a_memo_compare_every_other_field(cls, memo: str) -> None:
    """`==` leaves out the memo only, wherever a field is declared."""
    base = cls(**{f.name: _value(f.name, 0) for f in fields(cls) if f.required})
    for f in fields(cls):
        changed = msgspec.structs.replace(base, **{f.name: _value(f.name, 1)})
        assert (changed == base) is (f.name == memo), f.name


def _value(name: str, n: int) -> object:
    return {"format": 100 + n, "changed": bool(n), "broken_count": n, "counts": {"Healthy": n}}.get(name, f"{name}-{n}")
