"""One WEC (`edge1`) and one ConfigMap placed on it, in a namespace of the caller's choosing: small
enough to run against a real cluster (KSGITOPS_TEST_KUBECONFIG) inside a throwaway namespace."""
from __future__ import annotations

_FILES = {
    "spaces/inv/edge1.yaml": """
apiVersion: edge.kubestellar.io/v2alpha1
kind: SyncTarget
metadata:
  name: edge1
  labels: {id: edge1}
  annotations: ANNOTATIONS
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata: {name: edge1, labels: {env: test}}
spec:
  resource: {group: edge.kubestellar.io, version: v2alpha1, resource: synctargets}
  instanceSelector: {matchLabels: {id: edge1}}
""",
    "spaces/wds/placement.yaml": """
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: p}
spec:
  locationSelectors: [{matchLabels: {env: test}}]
  downsync:
  - apiGroup: ""
    resources: [configmaps]
    namespaces: [NAMESPACE]
""",
    "spaces/wds/cm.yaml": """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: NAMESPACE}
data: {color: blue}
""",
}


def minimal_fleet(namespace: str, context: str | None = None) -> dict[str, str]:
    """The files; with `context`, the SyncTarget names that kubeconfig context (for collect)."""
    annotations = "{ksgitops.kubestellar.io/kubeconfig-context: %s}" % context if context else "{}"
    return {path: text.replace("NAMESPACE", namespace).replace("ANNOTATIONS", annotations)
            for path, text in _FILES.items()}


def one_wec_inventory(location_labels: str = "env: prod") -> str:
    """An inventory file of one WEC, `one`: its SyncTarget (`id: one`) and the Location selecting it."""
    return ("apiVersion: edge.kubestellar.io/v2alpha1\nkind: SyncTarget\nmetadata: {name: one, labels: {id: one}}\n"
            "---\napiVersion: edge.kubestellar.io/v2alpha1\nkind: Location\n"
            f"metadata: {{name: one, labels: {{{location_labels}}}}}\nspec: {{instanceSelector: {{matchLabels: {{id: one}}}}}}\n")


def configmaps_placement() -> str:
    """An EdgePlacement `p` placing every ConfigMap of its space on the Locations labelled env=prod."""
    return ("apiVersion: edge.kubestellar.io/v2alpha1\nkind: EdgePlacement\nmetadata: {name: p}\nspec:\n"
            "  locationSelectors: [{matchLabels: {env: prod}}]\n  downsync: [{apiGroup: \"\", resources: [configmaps]}]\n")


def gadget_crd(scope: str) -> str:
    """The CustomResourceDefinition of example.com's Gadget (plural gadgets, served and stored at v1)."""
    return ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\n"
            "spec:\n  group: example.com\n  names: {kind: Gadget, plural: gadgets}\n"
            f"  scope: {scope}\n  versions: [{{name: v1, served: true, storage: true}}]\n")
