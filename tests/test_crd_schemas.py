"""schema/*.json agree with KubeStellar's CRDs, field by field.

The CRDs are read at test time from a clone of kubestellar/kubestellar (env KSGITOPS_KUBESTELLAR_MIRROR,
a bare or normal git directory; skipped when absent), never copied into this project:
- v2alpha1 kinds: config/crds/edge.kubestellar.io_*.yaml at v0.14.2;
- v1alpha1 kinds: the same files at v0.7.0 (the last release that served v1alpha1);
- Space and SpaceProviderDesc: space-framework/config/crds at v0.14.2 and config/crds at v0.7.0
  (the same apiVersion, two shapes: ksgitops reads both).

For every field a CRD defines, our schema defines it too (else ksgitops would drop what the API
server keeps), with the same type, required fields (less those the CRD defaults), enum, pattern,
lengths, item counts, defaults and formats (date-time is our Time pattern, int32 a range); and an
object the CRD describes field by field is closed (additionalProperties false), so what the API
server prunes, ksgitops drops too. Our schema may hold more only where it says so:
`x-ksgitops-extension` (a ksgitops field) or `x-ksgitops-warning` (stricter than the CRD, reported
as a warning). The few deliberate differences are listed in DIFFERENCES, each with its reason (and
in docs/KUBESTELLAR.md). A CRD's `status` behind a status subresource is not compared: the API
server ignores it in what is applied, and ksgitops drops it.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksgitops.core.load.schemas import SCHEMA_FILES, load_schema

MIRROR = Path(os.environ.get("KSGITOPS_KUBESTELLAR_MIRROR", "/work/.mirror/kubestellar+kubestellar/repo"))

EDGE = "config/crds/edge.kubestellar.io_{}.yaml"
CASES = [  # (tag, CRD file, apiVersion served)
    *[("v0.14.2", EDGE.format(f), "edge.kubestellar.io/v2alpha1") for f in
      ("synctargets", "locations", "customizers", "edgeplacements", "singleplacementslices", "syncerconfigs")],
    *[("v0.7.0", EDGE.format(f), "edge.kubestellar.io/v1alpha1") for f in
      ("synctargets", "locations", "customizers", "edgeplacements", "singleplacementslices", "syncerconfigs")],
    ("v0.14.2", "space-framework/config/crds/space.kubestellar.io_spaces.yaml", "space.kubestellar.io/v1alpha1"),
    ("v0.14.2", "space-framework/config/crds/space.kubestellar.io_spaceproviderdescs.yaml",
     "space.kubestellar.io/v1alpha1"),
    ("v0.7.0", "config/crds/space.kubestellar.io_spaces.yaml", "space.kubestellar.io/v1alpha1"),
    ("v0.7.0", "config/crds/space.kubestellar.io_spaceproviderdescs.yaml", "space.kubestellar.io/v1alpha1"),
]

# (kind, field path, what differs) -> why ksgitops differs on purpose
DIFFERENCES = {
    ("EdgePlacement", "spec.downsync[]", "required apiGroup"):
        "an absent apiGroup matches every group, as KubeStellar's own Go type says of nil",
    ("Location", "spec", "required resource"):
        "ksgitops does not read spec.resource; Locations without it are accepted",
    ("Location", "spec.resource.version", "enum"):
        "either version is accepted in either apiVersion (ksgitops does not read it)",
    ("SpaceProviderDesc", "spec", "required ProviderType"): "an absent ProviderType means git",
    ("Space", "spec", "required SpaceProviderDescName"):
        "v0.7 required it, v0.14.2 does not: absent means ksgitops' git provider",
}

TIME_PATTERN = load_schema("common.json")["$defs"]["Time"]["pattern"]
INT32 = {"minimum": -2 ** 31, "maximum": 2 ** 31 - 1}
COMPARED = ("enum", "pattern", "maxLength", "minLength", "minItems", "maxItems", "default")


def _crd(tag: str, path: str) -> dict[str, Any]:
    if not MIRROR.exists():
        pytest.skip(f"no KubeStellar clone at {MIRROR} (set KSGITOPS_KUBESTELLAR_MIRROR)")
    text = subprocess.run(["git", f"--git-dir={_git_dir()}", "show", f"{tag}:{path}"], check=True,
                          capture_output=True, text=True).stdout
    return next(d for d in yaml.safe_load_all(text) if d)


def _git_dir() -> Path:
    return MIRROR / ".git" if (MIRROR / ".git").exists() else MIRROR


class Ours:
    """Our schema, with $refs and nullable wrappers (`if: {type: null}`) resolved."""

    def __init__(self, name: str) -> None:
        self.root = name

    def resolve(self, node: Any, file: str) -> tuple[Any, str]:
        while isinstance(node, dict):
            if "$ref" in node:
                target, _, pointer = node["$ref"].partition("#")
                file = target or file
                node = load_schema(file)
                for part in pointer.strip("/").split("/"):
                    node = node[part]
            elif node.get("if") == {"type": "null"}:
                node = node["else"]
            else:
                break
        return node, file


class Comparison:
    def __init__(self, kind: str, ours: Ours, union: dict[str, set[str]], status_dropped: bool) -> None:
        self.kind, self.ours, self.union, self.status_dropped = kind, ours, union, status_dropped
        self.found: list[str] = []

    def differ(self, path: str, what: str) -> None:
        if (self.kind, path, what) not in DIFFERENCES:
            self.found.append(f"{self.kind} {path or '(top)'}: {what}")

    def node(self, crd: dict[str, Any], ours: Any, file: str, path: str) -> None:
        ours, file = self.ours.resolve(ours, file)
        if not isinstance(ours, dict):
            return self.differ(path, "not described by our schema")
        self.scalars(crd, ours, path)
        if "properties" in crd:
            self.properties(crd, ours, file, path)
        elif isinstance(crd.get("additionalProperties"), dict):
            if not isinstance(ours.get("additionalProperties"), dict):
                return self.differ(path, "a map in the CRD")
            self.node(crd["additionalProperties"], ours["additionalProperties"], file, f"{path}{{}}")
        if "items" in crd:
            if "items" not in ours:
                return self.differ(path, "items not described")
            self.node(crd["items"], ours["items"], file, f"{path}[]")

    def scalars(self, crd: dict[str, Any], ours: dict[str, Any], path: str) -> None:
        if "type" in crd and not crd.get("x-kubernetes-int-or-string") and ours.get("type") != crd["type"]:
            self.differ(path, f"type {crd['type']} vs {ours.get('type')}")
        strict = "x-ksgitops-warning" in ours  # stricter on purpose: a warning, never an error
        for key in COMPARED:
            if key == "pattern" and crd.get("format") == "date-time":
                continue  # our Time pattern stands for the format (checked below)
            if key in crd:
                if crd[key] != ours.get(key):
                    self.differ(path, key)
            elif key in ours and key != "default" and not strict:
                self.differ(path, key)
        if crd.get("format") == "date-time" and ours.get("pattern") != TIME_PATTERN:
            self.differ(path, "date-time")
        if crd.get("format") == "int32" and {k: ours.get(k) for k in INT32} != INT32:
            self.differ(path, "int32")

    def properties(self, crd: dict[str, Any], ours: dict[str, Any], file: str, path: str) -> None:
        props = ours.get("properties", {})
        if ours.get("additionalProperties") is not False:
            self.differ(path, "open: the API server prunes unknown fields")
        defaulted = {k for k, v in crd["properties"].items() if "default" in v}
        theirs = set(crd.get("required", [])) - defaulted
        if not path:  # every object needs these: the API server's own rule, not the CRD's
            theirs |= {"apiVersion", "kind", "metadata"}
        for name in sorted(theirs ^ set(ours.get("required", []))):
            self.differ(path, f"required {name}")
        for name, sub in crd["properties"].items():
            child = f"{path}.{name}" if path else name
            if not path and name in ("apiVersion", "kind", "metadata"):
                continue
            if not path and name == "status" and self.status_dropped:
                continue
            if name not in props:
                self.differ(child, "missing in our schema (ksgitops would drop it)")
                continue
            self.node(sub, props[name], file, child)
        for name in sorted(set(props) - self.union.get(path, set())):
            sub, _ = self.ours.resolve(props[name], file)
            if not (isinstance(sub, dict) and sub.get("x-ksgitops-extension")):
                self.differ(f"{path}.{name}" if path else name, "not in the CRD")


def _version_schema(crd: dict[str, Any], api_version: str) -> dict[str, Any]:
    version = api_version.rpartition("/")[2]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    return served


def _union(node: dict[str, Any], path: str, out: dict[str, set[str]]) -> None:
    """Every property name the CRD has at each path."""
    if "properties" in node:
        out.setdefault(path, set()).update(node["properties"])
        for name, sub in node["properties"].items():
            _union(sub, f"{path}.{name}" if path else name, out)
    if isinstance(node.get("additionalProperties"), dict):
        _union(node["additionalProperties"], f"{path}{{}}", out)
    if "items" in node:
        _union(node["items"], f"{path}[]", out)


def _all_cases_of(kind_file: str) -> list[tuple[str, str, str]]:
    return [c for c in CASES if _schema_name(c) == kind_file]


def _schema_name(case: tuple[str, str, str]) -> str:
    tag, path, api_version = case
    kind = _crd(tag, path)["spec"]["names"]["kind"]
    return SCHEMA_FILES[(api_version, kind)]


@pytest.mark.parametrize("case", CASES, ids=[f"{t}:{p.rsplit('/', 1)[1]}" for t, p, _ in CASES])
def test_schema_agrees_with_kubestellars_crd(case: tuple[str, str, str]) -> None:
    tag, path, api_version = case
    crd = _crd(tag, path)
    kind = crd["spec"]["names"]["kind"]
    name = SCHEMA_FILES[(api_version, kind)]
    union: dict[str, set[str]] = {}
    for other in _all_cases_of(name):  # the same file serves several releases: their union
        other_crd = _crd(other[0], other[1])
        _union(_version_schema(other_crd, other[2])["schema"]["openAPIV3Schema"], "", union)
    served = _version_schema(crd, api_version)
    comparison = Comparison(kind, Ours(name), union, "status" in served.get("subresources", {}))
    comparison.node(served["schema"]["openAPIV3Schema"], load_schema(name), name, "")
    assert comparison.found == [], "\n".join(comparison.found)


@pytest.mark.parametrize("case", CASES, ids=[f"{t}:{p.rsplit('/', 1)[1]}" for t, p, _ in CASES])
def test_scope_agrees_with_kubestellars_crd(case: tuple[str, str, str]) -> None:
    """SyncerConfig is cluster-scoped (its CRD says so), Space and Customizer namespaced, ..."""
    from ksgitops.kinds import KindTable
    tag, path, api_version = case
    crd = _crd(tag, path)
    group = api_version.partition("/")[0]
    info = KindTable().lookup(group, crd["spec"]["names"]["kind"])
    assert info is not None and info.resource == crd["spec"]["names"]["plural"]
    assert info.namespaced == (crd["spec"]["scope"] == "Namespaced")


def test_the_comparison_finds_a_difference() -> None:
    """The comparison can fail: a field the CRD has and our schema lacks is reported."""
    crd = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "x": {"type": "string", "maxLength": 3}, "y": {"type": "integer"}}, "required": ["x"]}}}
    ours = {"type": "object", "additionalProperties": False, "required": ["apiVersion", "kind", "metadata"],
            "properties": {"spec": {
        "type": "object", "additionalProperties": False, "properties": {"x": {"type": "string"}}}}}
    union: dict[str, set[str]] = {}
    _union(crd, "", union)
    comparison = Comparison("Test", Ours("none"), union, False)
    comparison.node(crd, ours, "none", "")
    assert comparison.found == ["Test spec: required x", "Test spec.x: maxLength",
                                "Test spec.y: missing in our schema (ksgitops would drop it)"]
