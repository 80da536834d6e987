"""What a WEC receives: a mailbox's base copies with its patches applied (what kustomize does).

Also the redaction used wherever rendered objects are shown to people (diff): Secret values are
replaced by markers that say whether they changed, never what they are.
"""
from __future__ import annotations

from typing import Any

from ...model import is_secret
from ..emit.readback import rendered
from ..place.delivery import as_kustomize_builds
from ..tree import FileTree, walk

REDACTED = "<redacted>"


def render_mailbox(files: FileTree, folder: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(rel, object) pairs in path order, `rel` as in objects/<rel>.yaml. A file that does not
    read as reconcile writes it raises emit.readback.Unreadable, at its path in `folder` (the
    mailbox's, `spaces/<mailbox>`)."""
    return render_inputs(mailbox_inputs(files), folder=folder)


def render_inputs(inputs: list[tuple[str, bytes, bytes | None]], only: set[str] | None = None,
                  folder: str = "") -> list[tuple[str, dict[str, Any]]]:
    """render_mailbox of a mailbox's inputs (mailbox_inputs); with `only`, of those rels. What
    kustomize drops as it builds (`delivery.as_kustomize_builds`) is dropped here too."""
    found = []
    for rel, data, patch in inputs:
        if only is None or rel in only:
            body = as_kustomize_builds(rendered(folder, rel, data, patch))
            if body is not None:
                found.append((rel, _drop_empty_annotations(body)))
    return found


def mailbox_inputs(files: FileTree) -> list[tuple[str, bytes, bytes | None]]:
    """(rel, base copy, patch or None) of every object of a mailbox, in path order: what its
    rendering of that object is made of."""
    objects = files.get("objects")
    patches = files.get("patches")
    if not isinstance(objects, dict):
        return []
    patch_files = dict(walk(patches)) if isinstance(patches, dict) else {}
    found = []
    for path, data in walk(objects):
        if isinstance(data, bytes) and path.endswith(".yaml"):
            rel = path[: -len(".yaml")]
            patch = patch_files.get(f"{rel}.json")
            found.append((rel, data, patch if isinstance(patch, bytes) else None))
    return found


# The order `kubectl kustomize` prints objects in (its default "legacy" sort): these kinds first,
# in this order, so that what others refer to exists before them (a Namespace before what lives
# in it, a CRD before its objects); webhooks last; every other kind between them. Within one rank,
# by group_version_kind text (an empty group or version sorting as "~G"/"~V", after letters), then
# namespace ("~X" when cluster-scoped), then name. Kustomize: api/internal/builtins/SortOrderTransformer.go.
APPLY_FIRST = ("Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
               "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap",
               "Secret", "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume",
               "PersistentVolumeClaim", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget")
APPLY_LAST = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
_RANK = {**{kind: i - len(APPLY_FIRST) for i, kind in enumerate(APPLY_FIRST)},
         **{kind: i + 1 for i, kind in enumerate(APPLY_LAST)}}


def apply_order_key(body: dict[str, Any]) -> tuple[int, str, str]:
    """Sort key that puts objects in the order kustomize prints them (safe for `kubectl apply -f`)."""
    api_version = str(body.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    kind = str(body.get("kind") or "")
    md = body.get("metadata")
    md = md if isinstance(md, dict) else {}
    gvk = "_".join((group or "~G", version or "~V", kind or "~K"))
    # namespace and name compare as one "ns|name" text, as kustomize compares them
    return _RANK.get(kind, 0), gvk, f"{md.get('namespace') or '~X'}|{md.get('name') or '~N'}"


def in_apply_order(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(objects, key=apply_order_key)


def as_list(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The objects as one `v1` `List` document, as `kubectl get -o json` prints several."""
    return {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objects}


def _drop_empty_annotations(body: dict[str, Any]) -> dict[str, Any]:
    md = body.get("metadata")
    if isinstance(md, dict) and "annotations" in md and not md["annotations"]:
        del md["annotations"]
    return body


def redact_pair(old: dict[str, Any] | None, new: dict[str, Any] | None, secret: bool = False) -> tuple[Any, Any]:
    """Redact Secret data/stringData on both sides, marking which keys changed; `secret`: both
    sides are a Secret's whatever they say (read from a Secret's path, a hand edit may have
    changed its kind)."""
    return _redact(old, new, "old value", secret), _redact(new, old, "new value", secret)


def _redact(body: dict[str, Any] | None, other: dict[str, Any] | None, label: str,
            secret: bool) -> dict[str, Any] | None:
    if body is None or not (secret or is_secret(body)):
        return body
    copy = dict(body)
    for field in ("data", "stringData"):
        values = body.get(field)
        if values is None or field not in body:
            continue
        if not isinstance(values, dict):  # not a map kubectl would take, but Secret data all the same
            theirs_whole = (other or {}).get(field) if other is not None else None
            copy[field] = REDACTED if theirs_whole == values else f"{REDACTED} ({label})"
            continue
        theirs = (other or {}).get(field) if other is not None and (secret or is_secret(other)) else None
        theirs = theirs if isinstance(theirs, dict) else {}
        copy[field] = {k: REDACTED if theirs.get(k) == v else f"{REDACTED} ({label})" for k, v in values.items()}
    return copy
