"""The project fleet's WDS (benchmarks/fleet.py): Namespaces, workload objects (about a fifth
customized, half with expanded parameters, half through a Customizer in their namespace), the
Customizers, and a dozen EdgePlacements mixing selectors and clauses, `canary` with an upsync set."""
from __future__ import annotations

import base64
import random
from typing import Any

from fleet_names import API_EDGE, APP_TIERS, CUSTOMIZER, EDIT_TARGET_KEY, EXPAND, KINDS, NAMESPACES, REGIONS, wec_name


# -------------------------------------------------------------------------------------- workload

def ns_name(k: int) -> str:
    return f"team-{k:02d}"


def _base_meta(name: str, ns: str, app: str, app_tier: str) -> dict[str, Any]:
    return {"name": name, "namespace": ns, "labels": {"app": app, "tier": app_tier}}


def _make_object(rng: random.Random, kind: str, name: str, ns: str, mode: str) -> dict[str, Any]:
    """mode: "plain", "expand" (expand-parameters on the object) or "customizer"."""
    app = f"app-{rng.randrange(20):02d}"
    app_tier = rng.choice(APP_TIERS)
    meta = _base_meta(name, ns, app, app_tier)
    ann: dict[str, str] = {"example.com/description": f"{kind.lower()} {name} of {app}"}
    expand = mode == "expand"
    if expand:
        ann[EXPAND] = "true"
    elif mode == "customizer":
        ann[CUSTOMIZER] = _customizer_for(kind)
    meta["annotations"] = ann

    if kind == "ConfigMap":
        data = {
            "log-level": rng.choice(["debug", "info", "warn", "error"]),
            "max-connections": str(rng.randrange(10, 1000)),
            "feature-flags": ",".join(sorted(rng.sample(["a", "b", "c", "d", "e", "f"], 3))),
            "tier": "unset",
            EDIT_TARGET_KEY: "1",
        }
        if expand:
            data["region"] = "%(region)"
            data["greeting"] = "hello from %(id) in %(region) (%(tier), %(env))"
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}

    if kind == "Deployment":
        env = [{"name": "APP", "value": app},
               {"name": "WORKERS", "value": str(rng.randrange(1, 16))}]
        if expand:
            env += [{"name": "REGION", "value": "%(region)"},
                    {"name": "LOCATION", "value": "%(id)"},
                    {"name": "OWNER", "value": "%(owner)"}]
        if expand:
            meta["labels"]["env"] = "%(env)"
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": rng.randrange(1, 4),
                "selector": {"matchLabels": {"app": app, "name": name}},
                "template": {
                    "metadata": {"labels": {"app": app, "name": name}},
                    "spec": {
                        "serviceAccountName": "default",
                        "containers": [{
                            "name": "main",
                            "image": f"registry.example.com/{app}:1.{rng.randrange(30)}.{rng.randrange(10)}",
                            "ports": [{"containerPort": 8080, "name": "http"}],
                            "env": env,
                            "resources": {"requests": {"cpu": f"{rng.choice([50, 100, 250])}m",
                                                       "memory": f"{rng.choice([64, 128, 256])}Mi"}},
                        }],
                    },
                },
            },
        }

    if kind == "Service":
        if expand:
            ann["example.com/location"] = "%(id)-%(region)"
        port = rng.choice([80, 443, 8080, 9090])
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"selector": {"app": app},
                     "ports": [{"name": "http", "port": port, "targetPort": 8080, "protocol": "TCP"}]},
        }

    if kind == "Secret":
        if expand:
            ann["example.com/location"] = "%(id)"
            meta["labels"]["region"] = "%(region)"
        token = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(24))
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": meta,
            "type": "Opaque",
            "data": {
                "username": base64.b64encode(f"user-{name}".encode()).decode(),
                "token": base64.b64encode(token.encode()).decode(),
            },
        }

    if kind == "ServiceAccount":
        if expand:
            ann["example.com/owner"] = "%(owner)"
        return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}

    raise ValueError(kind)


def _customizer_for(kind: str) -> str:
    return {"Deployment": "deploy-by-location", "ConfigMap": "config-by-location"}.get(
        kind, "label-by-location")


def customizers(ns: str) -> list[dict[str, Any]]:
    region_label = {"path": "$.metadata.labels.region", "value": '"%(region)"'}

    def cust(name: str, replacements: list[dict[str, str]]) -> dict[str, Any]:
        return {
            "apiVersion": API_EDGE,
            "kind": "Customizer",
            "metadata": {"name": name, "namespace": ns, "annotations": {EXPAND: "true"}},
            "replacements": replacements,
        }

    return [
        cust("deploy-by-location", [{"path": "$.spec.replicas", "value": "3"}, dict(region_label)]),
        cust("config-by-location", [{"path": "$.data.tier", "value": '"%(tier)"'}, dict(region_label)]),
        cust("label-by-location", [dict(region_label)]),
    ]


def _kind_sequence(rng: random.Random, objects: int) -> list[str]:
    kinds = [k for k, _, _ in KINDS]
    weights = [w for _, _, w in KINDS]
    seq = kinds[:min(objects, len(kinds))]  # at least one of each when there is room
    seq += rng.choices(kinds, weights=weights, k=max(0, objects - len(seq)))
    return seq


def workload_docs(rng: random.Random, objects: int) -> tuple[list[dict], list[dict]]:
    """Return (namespaces, objects) in generation order."""
    n_ns = min(NAMESPACES, max(1, objects))
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": ns_name(k), "labels": {"team": f"team-{k}"}}}
        for k in range(n_ns)
    ]
    kinds = _kind_sequence(rng, objects)
    prefix = {k: p for k, p, _ in KINDS}
    # object 0 is the ConfigMap edit_workload_object() edits: keep it plain
    n_custom = round(objects / 5)
    candidates = list(range(1, objects))
    chosen = rng.sample(candidates, min(n_custom, len(candidates)))
    half = (len(chosen) + 1) // 2
    modes = {i: "expand" for i in chosen[:half]}
    modes.update({i: "customizer" for i in chosen[half:]})
    objs = []
    for i, kind in enumerate(kinds):
        ns = ns_name(i % n_ns)
        name = f"{prefix[kind]}-{i:05d}"
        objs.append(_make_object(rng, kind, name, ns, modes.get(i, "plain")))
    return namespaces, objs


# ------------------------------------------------------------------------------------ placements

def placements(rng: random.Random, namespaces: list[str], objs: list[dict], wecs: int) -> list[dict]:
    def ep(name: str, location_selectors: list[dict], downsync: list[dict], **extra: Any) -> dict:
        spec: dict[str, Any] = {"locationSelectors": location_selectors, "downsync": downsync}
        spec.update(extra)
        return {"apiVersion": API_EDGE, "kind": "EdgePlacement", "metadata": {"name": name},
                "spec": spec}

    def pick_ns(k: int) -> list[str]:
        return sorted(rng.sample(namespaces, min(k, len(namespaces))))

    cm_names = sorted(o["metadata"]["name"] for o in objs if o["kind"] == "ConfigMap")
    some_cms = sorted(rng.sample(cm_names, min(5, len(cm_names))))
    canary = [wec_name(i, wecs) for i in range(1, min(wecs, 5) + 1)]

    out = [
        # everything, everywhere in prod
        ep("prod-everything", [{"matchLabels": {"env": "prod"}}], [{}]),
    ]
    for region in REGIONS:
        out.append(ep(
            f"region-{region}",
            [{"matchLabels": {"region": region, "env": "staging"}}],
            [{"resources": ["configmaps", "deployments"], "namespaces": pick_ns(3)}],
        ))
    out += [
        ep("gold-deployments",
           [{"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}],
           [{"apiGroup": "apps", "resources": ["deployments"], "namespaces": ["*"]}],
           wantSingletonReportedState=False),
        ep("frontend-services",
           [{"matchExpressions": [{"key": "tier", "operator": "In", "values": ["silver", "bronze"]},
                                  {"key": "env", "operator": "NotIn", "values": ["prod"]}]}],
           [{"apiGroup": "", "resources": ["services", "serviceaccounts"],
             "labelSelectors": [{"matchLabels": {"tier": "frontend"}}]}]),
        ep("staging-configs",
           [{"matchLabels": {"env": "staging"}}],
           [{"apiGroup": "", "resources": ["configmaps"], "objectNames": some_cms},
            {"apiGroup": "", "resources": ["namespaces"], "objectNames": ["*"]}]),
        ep("eu-secrets",
           [{"matchLabels": {"region": "eu-central"}},
            {"matchLabels": {"region": "ap-south", "tier": "gold"}}],
           [{"apiGroup": "", "resources": ["secrets"], "namespaces": pick_ns(5)}]),
        ep("team-selected",
           [{"matchExpressions": [{"key": "env", "operator": "In", "values": ["staging"]},
                                  {"key": "tier", "operator": "Exists"}]}],
           [{"namespaceSelectors": [{"matchLabels": {"team": "team-3"}},
                                    {"matchExpressions": [{"key": "team", "operator": "In",
                                                           "values": ["team-7"]}]}]}]),
        ep("backend-apps",
           [{"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["us-west"]},
                                  {"key": "env", "operator": "In", "values": ["staging"]}]}],
           [{"labelSelectors": [{"matchExpressions": [
               {"key": "tier", "operator": "In", "values": ["backend", "data"]},
               {"key": "app", "operator": "In", "values": [f"app-{k:02d}" for k in range(0, 20, 3)]}]}]}]),
        ep("canary",
           [{"matchExpressions": [{"key": "id", "operator": "In", "values": canary}]}],
           [{"resources": ["*"], "namespaces": ["*"], "objectNames": ["*"]}],
           wantSingletonReportedState=True,
           upsync=[{"apiGroup": "coordination.k8s.io", "resources": ["leases"],
                    "namespaces": ["*"], "names": ["*"]}]),
    ]
    return out
