"""A second synthetic fleet, written apart from fleet.py so that no optimisation is tuned to one
generator. Same knobs (WECs, workload objects, seed), different everything else:

    spaces/sites/<provider>/<site>/synctarget.yaml     one object per file, folders per provider
    spaces/sites/<provider>/<site>/location.yaml
    spaces/<wds>/namespaces/<ns>.yaml                  two WDSes: platform (2 namespaces) and
    spaces/<wds>/workloads/<ns>/<app>/<kind>-<name>.yaml   product (8); one object per file,
    spaces/<wds>/customizers/<ns>/<name>.yaml          ConfigMaps and Secrets as JSON; two
    spaces/<wds>/placements/<name>.yaml                Customizers per namespace, shared

Objects come in per-app bundles (Deployment, Service, ServiceAccount, ConfigMap and one of HPA,
PodDisruptionBudget, Secret, Role + RoleBinding, NetworkPolicy, StatefulSet, CronJob), round robin
over the ten namespaces; a fifth are customized, half through `expand-parameters`, half through
the shared Customizers (bracketed JSONPath keys). Twelve EdgePlacements select Locations by
matchExpressions only; a Location selects its SyncTarget by `cluster.example.org/site` (every
hundredth, from the third, by a matchExpressions `In`). Every choice is a hash of (seed, what,
name), so an object's attributes depend on its name, not on the order of generation.

    python benchmarks/fleet_independent.py OUT --wecs 1000 --objects 200 [--seed 1]
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Sequence

import yaml

INVENTORY = "sites"
EDGE = "edge.kubestellar.io/v2alpha1"
EXPAND = "edge.kubestellar.io/expand-parameters"
CUSTOMIZER = "edge.kubestellar.io/customizer"
ZONE, PROVIDER, CONTACT, REPLICAS = ("topology.example.org/zone", "topology.example.org/provider",
                                     "example.org/contact", "example.org/replicas")
SITE_KEY = "cluster.example.org/site"
CLASSES = ["core", "edge", "far-edge"]
# namespace -> (WDS, domain label)
NAMESPACES = {
    "observability": ("platform", "platform"), "ingress-system": ("platform", "platform"),
    "cart": ("product", "shop"), "catalog": ("product", "shop"), "payments": ("product", "shop"),
    "search": ("product", "content"), "identity": ("product", "core-services"),
    "media": ("product", "content"), "analytics": ("product", "data"), "notify": ("product", "core-services"),
}
WORDS = ["ledger", "beacon", "quill", "harbor", "prism", "relay", "summit", "tandem", "vector", "willow",
         "anchor", "cobalt", "ember", "fjord", "garnet", "lumen"]
EXTRAS = ["HorizontalPodAutoscaler", "PodDisruptionBudget", "Secret", "Role", "NetworkPolicy",
          "StatefulSet", "CronJob"]
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _hash(seed: int, *parts: object) -> int:
    text = "\x1f".join(map(str, (seed, *parts)))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def _pick(seed: int, options: Sequence[Any], *parts: object, weights: Sequence[int] | None = None) -> Any:
    weights = weights or [1] * len(options)
    point = _hash(seed, *parts) % sum(weights)
    for option, weight in zip(options, weights):
        if point < weight:
            return option
        point -= weight
    raise AssertionError("unreachable")


def wec_name(i: int, wecs: int) -> str:
    """SyncTarget name of site ``i`` (1-based) in a fleet of ``wecs``."""
    return f"edge{i:0{max(5, len(str(wecs)))}d}"


def _write(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    else:
        text = yaml.dump(doc, Dumper=_Dumper, sort_keys=True, indent=4, default_flow_style=False, width=4096)
    path.write_text(text, encoding="utf-8", newline="\n")


def _read(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    doc = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=_Loader)
    assert isinstance(doc, dict), path
    return doc


# ------------------------------------------------------------------------------------------ sites

def _site(seed: int, name: str, i: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    provider = _pick(seed, ["aws", "gcp", "azure", "metal"], "provider", name, weights=[7, 5, 4, 4])
    labels = {"site": name, PROVIDER: provider,
              ZONE: f"{provider}-{_pick(seed, ['north', 'south', 'east', 'west'], 'zone', name)}",
              "stage": _pick(seed, ["prod", "qa", "dev"], "stage", name, weights=[5, 3, 2]),
              "class": _pick(seed, CLASSES, "class", name, weights=[3, 5, 2])}
    if _hash(seed, "gpu", name) % 100 < 15:
        labels["accelerator"] = "gpu"
    target = {"apiVersion": EDGE, "kind": "SyncTarget",
              "metadata": {"name": name, "labels": {SITE_KEY: name, "cluster.example.org/provider": provider}}}
    instance = ({"matchExpressions": [{"key": SITE_KEY, "operator": "In", "values": [name]}]} if i % 100 == 3
                else {"matchLabels": {SITE_KEY: name}})
    location = {"apiVersion": EDGE, "kind": "Location",
                "metadata": {"name": name, "labels": labels,
                             "annotations": {CONTACT: f"ops-{_hash(seed, 'contact', name) % 40}@example.org",
                                             REPLICAS: str(1 + _hash(seed, "replicas", name) % 4)}},
                "spec": {"resource": {"group": "edge.kubestellar.io", "version": "v2alpha1", "resource": "synctargets"},
                         "instanceSelector": instance}}
    return provider, target, location


def _write_sites(root: Path, seed: int, wecs: int) -> None:
    for i in range(1, wecs + 1):
        name = wec_name(i, wecs)
        provider, target, location = _site(seed, name, i)
        folder = root / "spaces" / INVENTORY / provider / name
        _write(folder / "synctarget.yaml", target)
        _write(folder / "location.yaml", location)


# -------------------------------------------------------------------------------------- workloads

def _labels(seed: int, ns: str, app: str) -> dict[str, str]:
    platform = NAMESPACES[ns][0] == "platform"
    roles = ["agent", "exporter", "gateway", "controller"] if platform else ["api", "worker", "web", "db"]
    labels = {"app.kubernetes.io/name": app, "app.kubernetes.io/component": _pick(seed, roles, "role", app),
              "app.kubernetes.io/part-of": NAMESPACES[ns][0],
              "example.org/footprint": _pick(seed, ["small", "large"], "footprint", app, weights=[2, 1])}
    if _hash(seed, "canary", app) % 10 == 0:
        labels["example.org/canary"] = "true"
    return labels


def _pod_spec(seed: int, app: str, expand: bool) -> dict[str, Any]:
    env = [{"name": "APP_NAME", "value": app}, {"name": "THREADS", "value": str(2 + _hash(seed, "threads", app) % 6)}]
    if expand:
        env += [{"name": "ZONE", "value": f"%({ZONE})"}, {"name": "STAGE", "value": "%(stage)"},
                {"name": "PAGER", "value": f"%({CONTACT})"},
                {"name": "SITE_CLASS", "value": "%(class)"}]
    return {"serviceAccountName": app, "containers": [{
        "name": app, "image": f"images.example.org/{app}:{_hash(seed, 'tag', app) % 90}.{_hash(seed, 'patch', app) % 9}",
        "env": env, "ports": [{"containerPort": 8443, "name": "https"}]}]}


def _workload_body(seed: int, kind: str, ns: str, app: str, expand: bool) -> tuple[str, dict[str, Any]]:
    """(apiVersion, the object's kind-specific fields)."""
    selector = {"matchLabels": {"app.kubernetes.io/name": app}}
    template = {"metadata": {"labels": {"app.kubernetes.io/name": app}}, "spec": _pod_spec(seed, app, expand)}
    if kind == "Deployment":
        return "apps/v1", {"spec": {"replicas": 1 + _hash(seed, "scale", app) % 3, "selector": selector,
                                    "template": template}}
    if kind == "StatefulSet":
        return "apps/v1", {"spec": {"replicas": 1, "serviceName": app, "selector": selector, "template": template}}
    if kind == "CronJob":
        job = {"template": {"spec": dict(template["spec"], restartPolicy="OnFailure")}}
        return "batch/v1", {"spec": {"schedule": f"{_hash(seed, 'minute', app) % 60} * * * *", "jobTemplate": {"spec": job}}}
    if kind == "Service":
        return "v1", {"spec": {"selector": {"app.kubernetes.io/name": app},
                               "ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}
    if kind == "ConfigMap":
        data = {"revision": "1", "log.format": _pick(seed, ["json", "text"], "logfmt", app),
                "pool.size": str(4 + _hash(seed, "pool", app) % 60)}
        if expand:
            data["endpoint"] = f"https://%(site).%({ZONE}).example.org"
            data["stage"] = "%(stage) (%(class))"
        return "v1", {"data": data}
    if kind == "Secret":
        key = hashlib.blake2b(f"{seed}/{app}".encode(), digest_size=18).hexdigest()
        return "v1", {"type": "Opaque", "data": {"api-key": base64.b64encode(key.encode()).decode()}}
    if kind == "HorizontalPodAutoscaler":
        return "autoscaling/v2", {"spec": {"minReplicas": 1, "maxReplicas": 5, "scaleTargetRef": {
            "apiVersion": "apps/v1", "kind": "Deployment", "name": app}}}
    if kind == "PodDisruptionBudget":
        return "policy/v1", {"spec": {"maxUnavailable": 1, "selector": selector}}
    if kind == "NetworkPolicy":
        return "networking.k8s.io/v1", {"spec": {"podSelector": selector, "policyTypes": ["Ingress"]}}
    if kind == "Role":
        return "rbac.authorization.k8s.io/v1", {"rules": [{"apiGroups": [""], "resources": ["configmaps"],
                                                           "verbs": ["get", "list", "watch"]}]}
    if kind == "RoleBinding":
        return "rbac.authorization.k8s.io/v1", {
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{app}-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": app, "namespace": ns}]}
    if kind == "ServiceAccount":
        return "v1", {}
    raise ValueError(kind)


def _expand_marks(kind: str, metadata: dict[str, Any]) -> None:
    """What an expand-parameters object carries outside its body (the body's own go in _workload_body)."""
    metadata["annotations"][EXPAND] = "true"
    metadata["annotations"]["example.org/placed-on"] = "%(site) (%(class))"
    if kind == "Service":
        metadata["annotations"]["example.org/zone"] = f"%({ZONE})"
    elif kind == "Secret":
        metadata["labels"]["example.org/stage"] = "%(stage)"
    elif kind not in ("Deployment", "StatefulSet", "CronJob", "ConfigMap"):
        metadata["annotations"]["example.org/site"] = "%(site)"


def _bundle(app_index: int, seed: int) -> tuple[str, str, list[tuple[str, str]]]:
    """(namespace, app, [(kind, name)]) of app number ``app_index``."""
    ns = list(NAMESPACES)[app_index % len(NAMESPACES)]
    app = f"{_pick(seed, WORDS, 'word', app_index)}-{app_index:04d}"
    extra = EXTRAS[app_index % len(EXTRAS)]
    kinds = [("Deployment", app), ("Service", app), ("ServiceAccount", app), ("ConfigMap", app)]
    kinds += [("Role", f"{app}-reader"), ("RoleBinding", f"{app}-reader")] if extra == "Role" else [(extra, app)]
    return ns, app, kinds


def _workloads(seed: int, objects: int) -> list[tuple[str, str, str, str]]:
    """(namespace, app, kind, name) of the first ``objects`` workload objects."""
    out: list[tuple[str, str, str, str]] = []
    app_index = 0
    while len(out) < objects:
        ns, app, kinds = _bundle(app_index, seed)
        out += [(ns, app, kind, name) for kind, name in kinds]
        app_index += 1
    return out[:objects]


def _customization(seed: int, items: list[tuple[str, str, str, str]]) -> dict[int, str]:
    """Index -> "expand" or "customizer" for a fifth of the objects; app 0 (the edit target) stays plain."""
    eligible = [i for i, (_, app, _, _) in enumerate(items) if not app.endswith("-0000")]
    ranked = sorted(eligible, key=lambda i: _hash(seed, "customize", *items[i]))[:round(len(items) / 5)]
    return {i: "expand" if n % 2 == 0 else "customizer" for n, i in enumerate(ranked)}


def _customizers(ns: str) -> list[dict[str, Any]]:
    site = [{"path": "$.metadata.labels['example.org/site']", "value": '"%(site)"'},
            {"path": f"$.metadata.annotations['{CONTACT}']", "value": f'"%({CONTACT})"'},
            {"path": "$.metadata.labels['example.org/site-class']", "value": '"%(class)"'}]
    return [{"apiVersion": EDGE, "kind": "Customizer",
             "metadata": {"name": name, "namespace": ns, "annotations": {EXPAND: "true"}},
             "replacements": replacements}
            for name, replacements in (("site-labels", site),
                                       ("scale-and-site", [*site, {"path": "$.spec.replicas", "value": f"%({REPLICAS})"}]))]


def _write_workloads(root: Path, seed: int, objects: int) -> None:
    items = _workloads(seed, objects)
    modes = _customization(seed, items)
    for ns, (wds, domain) in NAMESPACES.items():
        labels = {"example.org/domain": domain, "example.org/criticality": _pick(seed, ["high", "medium", "low"], "crit", ns)}
        _write(root / "spaces" / wds / "namespaces" / f"{ns}.yaml",
               {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}})
        for customizer in _customizers(ns):
            _write(root / "spaces" / wds / "customizers" / ns / f"{customizer['metadata']['name']}.yaml", customizer)
    for i, (ns, app, kind, name) in enumerate(items):
        mode = modes.get(i, "plain")
        api_version, body = _workload_body(seed, kind, ns, app, mode == "expand")
        metadata: dict[str, Any] = {"name": name, "namespace": ns, "labels": _labels(seed, ns, app),
                                    "annotations": {"example.org/owner": f"{NAMESPACES[ns][1]}-team"}}
        if mode == "expand":
            _expand_marks(kind, metadata)
        elif mode == "customizer":
            metadata["annotations"][CUSTOMIZER] = "scale-and-site" if kind in ("Deployment", "StatefulSet") else "site-labels"
        suffix = ".json" if kind in ("ConfigMap", "Secret") else ".yaml"
        _write(root / "spaces" / NAMESPACES[ns][0] / "workloads" / ns / app / f"{kind.lower()}-{name}{suffix}",
               {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body})


# ------------------------------------------------------------------------------------- placements

def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def _placements(wecs: int) -> dict[str, list[tuple[str, list[Any], list[Any], dict[str, Any]]]]:
    """WDS -> [(name, locationSelectors, downsync, more spec)]; every selector uses matchExpressions."""
    def sel(*exprs: dict[str, Any]) -> dict[str, Any]:
        return {"matchExpressions": list(exprs)}
    pilots = [wec_name(i, wecs) for i in range(1, min(3, wecs) + 1)]
    return {
        "platform": [
            ("observability-all-sites", [sel(_expr("stage", "Exists"))],
             [{"namespaces": ["observability"]}, {"apiGroup": "", "resources": ["namespaces"], "objectNames": ["observability"]}], {}),
            ("ingress-at-the-edge", [sel(_expr("class", "In", "edge", "far-edge"))],
             [{"namespaceSelectors": [sel(_expr("kubernetes.io/metadata.name", "In", "ingress-system"))]}], {}),
            ("metal-monitoring", [sel(_expr(PROVIDER, "In", "metal"))],
             [{"labelSelectors": [sel(_expr("app.kubernetes.io/component", "In", "agent", "exporter"))]}], {}),
            ("gpu-sites", [sel(_expr("accelerator", "Exists"))],
             [{"apiGroup": "apps", "resources": ["deployments", "daemonsets"], "namespaces": ["*"]}], {}),
        ],
        "product": [
            ("prod-full", [sel(_expr("stage", "In", "prod"))],
             [{"namespaces": ["*"]}, {"apiGroup": "", "resources": ["namespaces"], "objectNames": ["*"]}], {}),
            ("qa-shop", [sel(_expr("stage", "In", "qa"), _expr("class", "NotIn", "far-edge"))],
             [{"namespaceSelectors": [sel(_expr("example.org/domain", "In", "shop", "core-services"))]}], {}),
            ("qa-small-footprint", [sel(_expr("stage", "In", "qa"), _expr("class", "In", "far-edge"))],
             [{"labelSelectors": [sel(_expr("example.org/footprint", "In", "small"))]}], {}),
            ("dev-canaries", [sel(_expr("stage", "In", "dev"))],
             [{"labelSelectors": [sel(_expr("example.org/canary", "Exists"))]}], {}),
            ("zone-config", [sel(_expr(ZONE, "In", "aws-north", "gcp-east")),
                             sel(_expr(PROVIDER, "In", "azure"), _expr("stage", "NotIn", "dev"))],
             [{"apiGroup": "", "resources": ["configmaps", "secrets"], "namespaces": ["cart", "payments", "identity"]}], {}),
            ("batch-on-core", [sel(_expr("class", "In", "core"), _expr("stage", "NotIn", "dev"))],
             [{"apiGroup": "batch", "resources": ["cronjobs"]},
              {"apiGroup": "apps", "resources": ["statefulsets"],
               "labelSelectors": [sel(_expr("app.kubernetes.io/component", "In", "db", "worker"))]}], {}),
            ("access-everywhere", [sel(_expr("site", "Exists"))],
             [{"apiGroup": "rbac.authorization.k8s.io", "resources": ["roles", "rolebindings"], "namespaces": ["*"]},
              {"apiGroup": "", "resources": ["serviceaccounts"]}], {}),
            ("pilot-sites", [sel(_expr("site", "In", *pilots))], [{"objectNames": ["*"]}],
             {"wantSingletonReportedState": True,
              "upsync": [{"apiGroup": "discovery.k8s.io", "resources": ["endpointslices"], "namespaces": ["*"], "names": ["*"]}]}),
        ],
    }


def _write_placements(root: Path, wecs: int) -> None:
    for wds, placements in _placements(wecs).items():
        for name, selectors, downsync, more in placements:
            _write(root / "spaces" / wds / "placements" / f"{name}.yaml",
                   {"apiVersion": EDGE, "kind": "EdgePlacement", "metadata": {"name": name},
                    "spec": {"locationSelectors": selectors, "downsync": downsync, **more}})


def generate(root: Path, wecs: int, objects: int, seed: int = 1) -> None:
    """Write the fleet's source repository into ``root``: ``wecs`` sites, ``objects`` workload objects."""
    if wecs < 1 or objects < 1:
        raise ValueError("wecs and objects must be >= 1")
    root = Path(root)
    _write_sites(root, seed, wecs)
    _write_workloads(root, seed, objects)
    _write_placements(root, wecs)


# ---------------------------------------------------------------------------------------- mutators

def change_location_label(root: Path, index: int = 1) -> Path:
    """Move the ``class`` label of site ``index``'s Location to the next value (core -> edge ->
    far-edge -> core); returns the one file edited."""
    found = sorted((Path(root) / "spaces" / INVENTORY).glob(f"*/edge*{index}/location.yaml"))
    for path in found:
        doc = _read(path)
        if int(doc["metadata"]["name"][len("edge"):]) == index:
            labels = doc["metadata"]["labels"]
            labels["class"] = CLASSES[(CLASSES.index(labels["class"]) + 1) % len(CLASSES)]
            _write(path, doc)
            return path
    raise KeyError(f"no Location for site {index} under {root}")


def edit_workload_object(root: Path) -> Path:
    """Bump ``data.revision`` of the first app's ConfigMap (platform, namespace observability,
    placed on every site, never customized); returns the one file edited."""
    found = sorted((Path(root) / "spaces" / "platform" / "workloads" / "observability").glob("*-0000/configmap-*.json"))
    if not found:
        raise FileNotFoundError(f"the first app's ConfigMap is missing under {root}")
    doc = _read(found[0])
    doc["data"]["revision"] = str(int(doc["data"]["revision"]) + 1)
    _write(found[0], doc)
    return found[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="directory to write the repo into (created)")
    ap.add_argument("--wecs", type=int, default=1000)
    ap.add_argument("--objects", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    generate(args.out, args.wecs, args.objects, args.seed)
    print(f"wrote {args.wecs} sites x {args.objects} objects (seed {args.seed}) to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
