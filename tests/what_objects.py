"""What the tests of EdgePlacement selection (tests/test_what*.py) share: objects of a WDS `wds`
(`mk`), a placement of them, their kinds, and a few common objects and namespace labels."""
from __future__ import annotations

from typing import Any

from ksgitops.kinds import KindInfo, KindTable
from ksgitops.model import Obj, Origin


KINDS = KindTable()


def mk(api: str, kind: str, name: str, ns: str | None = None, labels: dict | None = None,
       **top: Any) -> Obj:
    """An object of the WDS `wds`."""
    md: dict[str, Any] = {"name": name}
    if ns is not None:
        md["namespace"] = ns
    if labels is not None:
        md["labels"] = labels
    return Obj(space="wds", body={"apiVersion": api, "kind": kind, "metadata": md, **top},
               origin=Origin("spaces/wds/x.yaml", 1))


def info(o: Obj) -> KindInfo:
    found = KINDS.lookup(o.group, o.kind)
    assert found is not None
    return found


def placement(spec: dict, api: str = "edge.kubestellar.io/v2alpha1", name: str = "p") -> Obj:
    return mk(api, "EdgePlacement", name, spec=spec)


DEPLOY = mk("apps/v1", "Deployment", "web", "ns1", {"app": "web", "tier": "front"})
CM = mk("v1", "ConfigMap", "cfg", "ns1", {"app": "web"})
CM_NS2 = mk("v1", "ConfigMap", "cfg", "ns2")
CM_NS_UNDEFINED = mk("v1", "ConfigMap", "cfg", "ghost")
CROLE = mk("rbac.authorization.k8s.io/v1", "ClusterRole", "reader", labels={"app": "web"})
NS1 = mk("v1", "Namespace", "ns1", labels={"team": "a"})
NS_LABELS = {"ns1": {"team": "a", "env": "prod"}, "ns2": {"team": "b"}}
V1 = "edge.kubestellar.io/v1alpha1"
