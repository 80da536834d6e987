"""Obj's identity properties read the body as it is, whatever YAML made of it."""
from __future__ import annotations

import pytest

from ksgitops.model import Obj, ObjRef, Origin


def obj(body: dict) -> Obj:
    return Obj("space", body, Origin("spaces/space/x.yaml", 1))


@pytest.mark.parametrize("body, expected", [
    ({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team"}},
     ("apps/v1", "apps", "v1", "Deployment", "web", "team")),
    ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}, ("v1", "", "v1", "Namespace", "team", "")),
    ({"apiVersion": "a/b/v1", "kind": "K", "metadata": {"name": "n", "namespace": None}}, ("a/b/v1", "a/b", "v1", "K", "n", "")),
    ({"apiVersion": 1, "kind": True, "metadata": {"name": 5, "namespace": 0}}, ("1", "", "1", "True", "5", "")),
    ({"apiVersion": None, "kind": None, "metadata": {"name": None, "namespace": ""}}, ("None", "", "None", "None", "None", "")),
    ({"kind": "K", "metadata": ["not", "a", "map"]}, ("", "", "", "K", "", "")),
    ({"metadata": None}, ("", "", "", "", "", "")),
    ({}, ("", "", "", "", "", "")),
])
def test_identity_properties(body: dict, expected: tuple[str, ...]) -> None:
    o = obj(body)
    assert (o.api_version, o.group, o.version, o.kind, o.name, o.namespace) == expected
    assert o.ref == ObjRef(expected[1], expected[3], expected[5], expected[4])
    assert all(type(value) is str for value in (o.api_version, o.group, o.kind, o.name, o.namespace))
