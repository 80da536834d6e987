"""The project fleet's vocabulary (benchmarks/fleet.py): API group, space names, label values, the
workload kinds with their weights and files, annotation keys, WEC names."""
from __future__ import annotations

API_EDGE = "edge.kubestellar.io/v2alpha1"
INVENTORY = "inventory"
WDS = "apps"
WECS_PER_FILE = 100
NAMESPACES = 10

REGIONS = ["us-east", "us-west", "eu-central", "ap-south"]
TIERS = ["gold", "silver", "bronze"]
ENVS = ["prod", "staging"]
APP_TIERS = ["frontend", "backend", "data"]
# kind, prefix, weight (out of 20)
KINDS = [
    ("ConfigMap", "cm", 6),
    ("Deployment", "deploy", 5),
    ("Service", "svc", 4),
    ("Secret", "secret", 2),
    ("ServiceAccount", "sa", 3),
]
FILE_FOR_KIND = {
    "ConfigMap": "configmaps.yaml",
    "Deployment": "deployments.yaml",
    "Service": "services.yaml",
    "Secret": "secrets.yaml",
    "ServiceAccount": "serviceaccounts.yaml",
}
EXPAND = "edge.kubestellar.io/expand-parameters"
CUSTOMIZER = "edge.kubestellar.io/customizer"
# the ConfigMap edit_workload_object() changes: never customized, placed on every prod WEC
EDIT_TARGET_KEY = "revision"


def wec_name(i: int, wecs: int) -> str:
    """Name of WEC ``i`` (1-based) in a fleet of ``wecs``."""
    return f"wec-{i:0{max(4, len(str(wecs)))}d}"
