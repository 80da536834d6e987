"""The hypothesis strategy of tests/test_property.py: a random repo *model*, 1-2 inventory spaces
with 0-6 SyncTarget/Location pairs carrying random labels from a small vocabulary, 1-2 WDS spaces
with Namespaces, ConfigMaps, Deployments and Secrets (random labels, some `%(key)` references
under the expand annotation, some naming Customizers, existing or not), Customizers with
replacements and jsonPatch ops, and 0-3 EdgePlacements with random selectors and clauses; and
garbage files, hostile values among them (big integers, NaN, deep nesting, alias bombs)."""
from __future__ import annotations

from typing import Any

import yaml
from hypothesis import HealthCheck
from hypothesis import strategies as st


SETTINGS: dict[str, Any] = {"deadline": None,
                            "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]}

EDGE = "edge.kubestellar.io/v2alpha1"
EXPAND = "edge.kubestellar.io/expand-parameters"
CUSTOMIZER = "edge.kubestellar.io/customizer"

KEYS = ["env", "tier", "zone"]
VALUES = ["a", "b", "c"]
PARAM_KEYS = KEYS + ["region", "missing"]  # region: a Location annotation; missing: never defined
NAMESPACES = ["ns1", "ns2"]
NAMES = ["o1", "o2", "o.3"]  # a dot: kustomize reads patch targets as regular expressions

# --- the strategy ----------------------------------------------------------------------------

labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)

expression = st.one_of(
    st.fixed_dictionaries({"key": st.sampled_from(KEYS), "operator": st.sampled_from(["In", "NotIn"]),
                           "values": st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True)}),
    st.fixed_dictionaries({"key": st.sampled_from(KEYS), "operator": st.sampled_from(["Exists", "DoesNotExist"])}),
)

selector = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"matchLabels": labels.filter(bool)}),
    st.fixed_dictionaries({"matchExpressions": st.lists(expression, min_size=1, max_size=2)}),
    st.fixed_dictionaries({"matchLabels": labels.filter(bool),
                           "matchExpressions": st.lists(expression, min_size=1, max_size=1)}),
)

clause = st.fixed_dictionaries({}, optional={
    "apiGroup": st.sampled_from(["", "apps", "rbac.authorization.k8s.io"]),
    "resources": st.sampled_from([[], ["*"], ["configmaps"], ["deployments"], ["secrets", "configmaps"],
                                  ["namespaces"], ["configmaps", "deployments", "secrets"], ["clusterroles"]]),
    "namespaces": st.sampled_from([[], ["*"], ["ns1"], ["ns2"], ["ns1", "ns2"]]),
    "objectNames": st.sampled_from([[], ["*"], ["o1"], ["o2", "o.3"]]),
    "labelSelectors": st.lists(selector, max_size=1),
    "namespaceSelectors": st.lists(selector, max_size=1),
})

upsync_set = st.fixed_dictionaries({
    "apiGroup": st.sampled_from(["", "apps"]),
    "resources": st.sampled_from([["configmaps"], ["*"], ["deployments"]]),
    "namespaces": st.sampled_from([["ns1"], ["*"], []]),
    "names": st.sampled_from([["o1"], ["*"], []]),
})


def param_text(draw: Any) -> str:
    """A string that may reference parameters: plain, %(key), %% literal, a lone %."""
    parts = draw(st.lists(st.one_of(
        st.sampled_from(["x", "y-", "100%", "%%", "v"]),
        st.sampled_from(PARAM_KEYS + ["env"] * 6).map(lambda k: f"%({k})")), min_size=1, max_size=3))
    return "".join(parts)


@st.composite
def inventory_space(draw: Any, name: str) -> list[dict[str, Any]]:
    docs = []
    for i in range(draw(st.integers(0, 6))):
        st_name = f"c{i}"
        docs.append({"apiVersion": EDGE, "kind": "SyncTarget",
                     "metadata": {"name": st_name, "labels": {"id": st_name, **draw(labels)}}})
        loc_md: dict[str, Any] = {"name": st_name, "labels": {"env": draw(st.sampled_from(VALUES)), **draw(labels)}}
        if draw(st.booleans()):
            loc_md["annotations"] = {"region": draw(st.sampled_from(["north", "south"]))}
        instance = draw(st.one_of(st.just({"matchLabels": {"id": st_name}}), selector, st.none()))
        spec = {"resource": {"group": "edge.kubestellar.io", "version": "v2alpha1", "resource": "synctargets"}}
        if instance is not None:
            spec["instanceSelector"] = instance
        docs.append({"apiVersion": EDGE, "kind": "Location", "metadata": loc_md, "spec": spec})
    return docs


def _metadata(draw: Any, name: str, ns: str | None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if ns is not None:
        md["namespace"] = ns
    lab = draw(labels)
    if lab:
        md["labels"] = lab
    annotations = {}
    if draw(st.booleans()):
        annotations[EXPAND] = "true"
    if ns is not None and draw(st.integers(0, 3)) == 0:
        annotations[CUSTOMIZER] = draw(st.sampled_from(["cz1", "cz2", "nope"]))
    if annotations:
        md["annotations"] = annotations
    return md


@st.composite
def workload_object(draw: Any, ns: str, name: str, kind: str) -> dict[str, Any]:
    if kind == "ClusterRole":
        md = _metadata(draw, name, None)
        if draw(st.integers(0, 2)) == 0:
            md.setdefault("annotations", {})[CUSTOMIZER] = draw(st.sampled_from(["ns1/cz1", "ns2/cz2", "cz1"]))
        return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": md,
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": [param_text(draw)]}]}
    md = _metadata(draw, name, ns)
    if kind == "ConfigMap":
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md,
                "data": {"k": param_text(draw), "n": str(draw(st.integers(-5, 5)))}}
    if kind == "Secret":
        return {"apiVersion": "v1", "kind": "Secret", "metadata": md, "type": "Opaque",
                "data": {"password": draw(st.sampled_from(["c2VjcmV0", "b3RoZXI="]))}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md, "spec": {
        "replicas": draw(st.integers(0, 3)),
        "revisionHistoryLimit": draw(st.sampled_from([0, 10, 2**53, -(2**53)])),  # the exact-integer edge
        "progressDeadlineSeconds": draw(st.sampled_from([600, 0.5, 2.5])),
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "main", "image": "img:" + param_text(draw),
                                              "env": [{"name": "E", "value": param_text(draw)}]}]}}}}


replacement_path = st.sampled_from([
    "$.data.extra", "$.data.k", "$.metadata.labels.zone", "$.spec.replicas",
    "$.spec.template.spec.containers.0.image", "$.spec.template.spec.containers[0].env[0].value",
    "$['metadata']['labels']['tier']", "$.nothere.x",
])
replacement_value = st.sampled_from(['"%(env)"', '"plain"', "3", '"%(missing)"', '"100%%"', "not json", '"%(env)"', "7"])
patch_op = st.sampled_from([
    {"op": "add", "path": "/metadata/labels/patched", "value": "yes"},
    {"op": "replace", "path": "/metadata/labels/edge.kubestellar.io~1projected", "value": "%(tier)"},
    {"op": "remove", "path": "/data/n"},
    {"op": "test", "path": "/kind", "value": "ConfigMap"},
    {"op": "add", "path": "/spec/replicas", "value": 2},
])


@st.composite
def customizer(draw: Any, ns: str, name: str) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": ns}
    if draw(st.booleans()):
        md["annotations"] = {EXPAND: "true"}
    body: dict[str, Any] = {"apiVersion": EDGE, "kind": "Customizer", "metadata": md}
    reps = draw(st.lists(st.fixed_dictionaries({"path": replacement_path, "value": replacement_value}), max_size=2))
    if reps:
        body["replacements"] = reps
    ops = draw(st.lists(patch_op, max_size=2))
    if ops:
        body["jsonPatch"] = ops
    return body


@st.composite
def placement(draw: Any, name: str) -> dict[str, Any]:
    if draw(st.integers(0, 4)) == 0:  # the v1alpha1 form, converted on read
        spec_v1: dict[str, Any] = {"locationSelectors": draw(st.lists(selector, max_size=2))}
        if draw(st.booleans()):
            spec_v1["namespaceSelector"] = draw(selector)
        if draw(st.booleans()):
            spec_v1["nonNamespacedObjects"] = [{"apiGroup": "rbac.authorization.k8s.io", "resources": ["clusterroles"],
                                                "resourceNames": draw(st.sampled_from([["o1"], ["*"], []]))}]
        return {"apiVersion": "edge.kubestellar.io/v1alpha1", "kind": "EdgePlacement",
                "metadata": {"name": name}, "spec": spec_v1}
    spec: dict[str, Any] = {"locationSelectors": draw(st.one_of(st.just([{}]), st.lists(selector, max_size=2))),
                            "downsync": draw(st.one_of(st.just([{}]), st.lists(clause, max_size=2)))}
    if draw(st.integers(0, 3)) == 0:
        spec["upsync"] = draw(st.lists(upsync_set, min_size=1, max_size=1))
    if draw(st.booleans()):
        spec["wantSingletonReportedState"] = True
    return {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": name}, "spec": spec}


@st.composite
def wds_space(draw: Any, name: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for ns in draw(st.lists(st.sampled_from(NAMESPACES), unique=True, max_size=2)):
        md: dict[str, Any] = {"name": ns}
        lab = draw(labels)
        if lab:
            md["labels"] = lab
        docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": md})
    seen = set()
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["ConfigMap", "Deployment", "Secret", "ClusterRole"]))
        ns, obj_name = draw(st.sampled_from(NAMESPACES)), draw(st.sampled_from(NAMES))
        ns = "" if kind == "ClusterRole" else ns
        if (kind, ns, obj_name) not in seen:
            seen.add((kind, ns, obj_name))
            docs.append(draw(workload_object(ns, obj_name, kind)))
    for ns, cz in draw(st.lists(st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(["cz1", "cz2"])),
                                unique=True, max_size=2)):
        docs.append(draw(customizer(ns, cz)))
    for i in range(draw(st.sampled_from([0, 1, 1, 2, 3]))):
        docs.append(draw(placement(f"p{i}")))
    return docs


@st.composite
def repo_model(draw: Any) -> dict[str, list[dict[str, Any]]]:
    """{space name: documents}."""
    model = {}
    for name in ["inv1", "inv2"][: draw(st.integers(1, 2))]:
        model[name] = draw(inventory_space(name))
    for name in ["wds1", "wds2"][: draw(st.integers(1, 2))]:
        model[name] = draw(wds_space(name))
    return model


HOSTILE = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hostile, namespace: ns1}\n"

garbage_file = st.tuples(
    st.sampled_from(["inv1", "wds1", "wds2"]),
    st.sampled_from(["junk.yaml", "junk.json", "deep/junk.yml", "junk.txt"]),
    st.one_of(
        st.binary(max_size=48),
        st.one_of(st.integers(-10**6, 10**6), st.text(max_size=16), st.booleans(), st.none(),
                  st.lists(st.integers(0, 9), max_size=3)).map(lambda v: yaml.safe_dump(v).encode()),
        st.sampled_from([b"a: [1, 2\n", b"- 1\n- 2\n", b"apiVersion: v1\nkind: ConfigMap\n",
                         b"---\n---\n", b"# only a comment\n", b"{}", b"apiVersion: v1\nkind: Gizmo\nmetadata: {name: g}\n",
                         HOSTILE + b"spec: {n: 123456789012345678901234567890}\n", HOSTILE + b"spec: {n: .nan}\n",
                         HOSTILE + b"spec: {n: -.inf}\n", HOSTILE + b"spec: " + b"[" * 600 + b"]" * 600 + b"\n",
                         HOSTILE + b"spec: &a [*a]\n", b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: h, annotations: [x]}\n",
                         b"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [" + b"*a, " * 9 + b"*a]\nc: &c [" + b"*b, " * 9
                         + b"*b]\nd: &d [" + b"*c, " * 9 + b"*c]\ne: &e [" + b"*d, " * 9 + b"*d]\nf: &f [" + b"*e, " * 9
                         + b"*e]\ng: [" + b"*f, " * 9 + b"*f]\n"]),
    ),
)
