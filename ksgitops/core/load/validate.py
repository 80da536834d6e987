"""Stage 1b: validation of loaded objects: errors (they freeze the object's space: isolation.py) and warnings.

Schemas were checked when the files were read (convert.py). Here every object gets the checks
that need the kind table: apiVersion shape, its name as the API server checks it for its kind,
scope and namespace, labels and annotations; EdgePlacements and Locations get warnings for
selectors and clauses KubeStellar's CRDs accept but that match nothing or everything
(clauses.py). What a KubeStellar CRD and `kubectl apply` accept is a warning at worst:
- a kind no built-in mapping, CRD in the repo or RepoConfig `kinds` entry describes is loaded, its
  scope taken from `metadata.namespace`, with one warning per kind (no clause can place it);
- what workload.py finds (versions, top-level fields, ConfigMap and Secret keys and values, the
  keys a Secret's type requires, KubeStellar's annotations), each at the line of the field it is
  about;
- `metadata.namespace` on a cluster-scoped kind is ignored, as the API server clears it, and a
  namespaced object without `metadata.namespace` is read in namespace `default`, where
  `kubectl apply` with a default context puts it (a warning each; `with_scopes`, which the
  caller runs before `validate`);
- a Customizer replacement whose path is no JSONPath or whose value is no JSON: KubeStellar's
  customizer skips it and ships the rest, so each (object, WEC) using it is an error there
  (customizer.py), and the Customizer itself only warned of, once.
Two items of one key in a list KubeStellar's CRD makes a map (a Customizer's replacements by
path, a Location's availableSelectorLabels by key) are an error: its API server refuses the object.

A problem that names a field (what workload.py finds, a clause, a selector, a Customizer's
replacement, a label or annotation) is at that field's line (locate.py).
"""
from __future__ import annotations

from typing import Any, Iterable, MutableMapping

from msgspec.structs import replace

from ...kinds import KindTable, api_version_error, crd_kind, is_control, name_error
from ...model import Obj, ObjRef, Problem, object_digest, ref_order
from ...names import dns1123_label_error
from .clauses import Oddity, clause_warnings, selector_warnings
from .jsonshape import FieldPath
from .locate import FieldLines, Located
from .schemas import GENERATED_SCHEMAS, SCHEMA_FILES
from ..customize.customizer import customizer_errors, wants_expansion
from .selectors import label_key_error, label_value_error
from .workload import UNKNOWN_KIND, object_findings
from ...names import mailbox_name

DEFAULT_NAMESPACE = "default"
UNUSABLE = ("; each object using this Customizer keeps its previous copy rather than going out "
            "half-customized (KubeStellar's CRD takes it: a warning here)")


def validate(spaces: dict[str, list[Obj]], kinds: KindTable,
             memo: MutableMapping[Any, Any] | None = None, lines: FieldLines | None = None) -> list[Problem]:
    """All problems (errors and warnings) of the loaded spaces, in a stable order.

    Per-object checks depend only on the object, where it is and the kind table, so they are
    memoized by (content digest, origin, namespace, kind table) when the caller passes a memo (a
    persistent cache): the objects of a file that changed are mostly found there. A problem about
    one field takes that field's line from `lines` (else its document's)."""
    memo = {} if memo is None else memo
    lines = FieldLines() if lines is None else lines
    kinds_digest = kinds.checks_digest()
    problems: list[Problem] = []
    for objs in spaces.values():
        for obj in objs:
            # the digest as text: a persistent cache spreads such keys over its shards by that text
            key = ("validate-object", object_digest(obj).hex(), obj.origin, obj.namespace, kinds_digest)
            found = memo.get(key)
            if found is None:
                found = memo[key] = tuple(_object_problems(obj, kinds))
            if found:
                problems.extend(lines.placed(found, obj))
    problems = _one_per_unknown_kind(problems)
    problems.extend(_mailbox_problems(spaces))
    return sorted(set(problems))


def _object_problems(obj: Obj, kinds: KindTable) -> Iterable[Problem | Located]:
    error = api_version_error(obj.api_version)
    if error:
        yield Problem(obj.origin, error, obj=str(obj.ref))
        return
    if is_control(obj) and (obj.api_version, obj.kind) not in SCHEMA_FILES \
            and (obj.api_version, obj.kind) not in GENERATED_SCHEMAS:
        versions = ", ".join(sorted(v for v, k in SCHEMA_FILES if k == obj.kind))
        yield Problem(obj.origin, f"{obj.kind} {obj.name}: apiVersion {obj.api_version} is not a version of "
                                  f"{obj.kind} (KubeStellar and ksgitops define {versions})", obj=str(obj.ref))
        return
    for message, at, ref in object_findings(obj, kinds):
        yield Located(Problem(obj.origin, message, "warning", obj=ref), at)
    messages: list[tuple[str, FieldPath]] = []
    error = name_error(obj.group, obj.kind, obj.name)
    if error:
        messages.append((f"{obj.kind} name {error}", ()))
    if obj.namespace:
        error = dns1123_label_error(obj.namespace)
        messages.append((f"namespace {error}" if error else "", ()))
    messages.extend(_metadata_messages(obj.metadata, wants_expansion(obj.annotations)))
    messages.extend((m, ()) for m in _crd_messages(obj))
    yield from (_located(Problem(obj.origin, m, obj=str(obj.ref)), at) for m, at in messages if m)
    yield from (_located(_warning(obj, f"{obj.kind} {obj.name}: {m}"), at) for m, at in _control_warnings(obj, kinds))
    if obj.kind == "Customizer" and obj.group == "edge.kubestellar.io":
        yield from (_located(_warning(obj, f"Customizer {obj.name}: {m}{UNUSABLE}"), at) for m, at in customizer_errors(obj))
    yield from (_located(Problem(obj.origin, f"{obj.kind} {obj.name}: {m}", obj=str(obj.ref)), at)
                for m, at in _repeated_keys(obj))


# KubeStellar's CRDs whose lists are maps by a key (x-kubernetes-list-type: map): the API server
# refuses an object in which two items have the same key
_LIST_MAPS: dict[str, tuple[tuple[str, ...], str]] = {"Customizer": (("replacements",), "path"),
                                                      "Location": (("spec", "availableSelectorLabels"), "key")}


def _repeated_keys(obj: Obj) -> list[tuple[str, FieldPath]]:
    if obj.group != "edge.kubestellar.io" or obj.kind not in _LIST_MAPS:
        return []
    fields, key = _LIST_MAPS[obj.kind]
    items: Any = obj.body
    for name in fields:
        items = items.get(name) if isinstance(items, dict) else None
    seen: dict[Any, int] = {}
    found: list[tuple[str, FieldPath]] = []
    for i, item in enumerate(items if isinstance(items, list) else []):
        value = item.get(key) if isinstance(item, dict) else None
        if not isinstance(value, str):
            continue
        if value in seen:
            where = ".".join(fields)
            found.append((f"{where}[{i}].{key} {value!r} repeats {where}[{seen[value]}]: KubeStellar's CRD makes "
                          f"{where} a map by {key}, so its API server refuses this {obj.kind}", (*fields, i, key)))
        else:
            seen[value] = i
    return found


def _located(problem: Problem, at: FieldPath) -> Problem | Located:
    return Located(problem, at) if at else problem


def _warning(obj: Obj, message: str) -> Problem:
    return Problem(obj.origin, message, "warning", obj=str(obj.ref))


def _one_per_unknown_kind(problems: list[Problem]) -> list[Problem]:
    """Of the warnings about one unknown kind, the first (by origin) stands for all, with a count."""
    kept: dict[str, list[Problem]] = {}
    out = []
    for problem in problems:
        if problem.obj.startswith(UNKNOWN_KIND):
            kept.setdefault(problem.obj, []).append(problem)
        else:
            out.append(problem)
    for same in kept.values():
        first = min(same)
        more = f" ({len(same)} objects; the first is here)" if len(same) > 1 else ""
        out.append(replace(first, message=first.message + more, obj=""))
    return out


def _metadata_messages(md: dict[str, Any], expands: bool) -> list[tuple[str, FieldPath]]:
    messages: list[tuple[str, FieldPath]] = []
    for field in ("labels", "annotations"):
        value = md.get(field)
        if value is None:
            continue
        if not isinstance(value, dict):
            messages.append((f"metadata.{field} must map strings to strings", ("metadata", field)))
            continue
        for key, item in value.items():
            at = ("metadata", field, key if isinstance(key, str) else None)
            if not isinstance(item, str):
                if isinstance(item, (dict, list)):
                    messages.append((f"metadata.{field}.{key}: must be a string, not a {type(item).__name__}", at))
                continue  # a boolean, number or null: parse.py reported it where it is written
            check_value = field == "labels" and not (expands and "%(" in item)  # expanded per WEC
            error = label_key_error(key) or (label_value_error(item) if check_value else None)
            if error:
                messages.append((f"metadata.{field}: {error}", at))
    return messages


def _crd_messages(obj: Obj) -> list[str]:
    if obj.kind != "CustomResourceDefinition" or obj.group != "apiextensions.k8s.io" or crd_kind(obj):
        return []
    return [f"CustomResourceDefinition {obj.name}: spec.group must be a DNS-1123 subdomain with at least one dot, "
            "spec.names.kind a kind and spec.names.plural a DNS-1123 label (the API server refuses it otherwise)"]


def _control_warnings(obj: Obj, kinds: KindTable) -> list[Oddity]:
    if obj.kind == "CombinedStatus" and obj.group == "control.kubestellar.io":
        return [("a CombinedStatus is what `ksgitops status` writes (in .ksgitops/status/): one in a source "
                 "space is never placed and has no effect (remove it)", ())]
    if obj.group != "edge.kubestellar.io":
        return []
    if obj.kind == "EdgePlacement":
        return clause_warnings(obj, kinds)
    if obj.kind == "Location":
        return selector_warnings(obj)
    return []


def with_scopes(spaces: dict[str, list[Obj]], kinds: KindTable) -> tuple[dict[str, list[Obj]], list[Problem]]:
    """Each object of a known kind in that kind's scope, as `kubectl apply` and the API server
    read it, a copy with a warning: a namespaced object without `metadata.namespace` in namespace
    `default`, a cluster-scoped one without the `metadata.namespace` it gives (the server clears
    it). Two objects that then share an identity are an error. An object of a kind the table does
    not know keeps the scope its file gives."""
    problems: list[Problem] = []
    out: dict[str, list[Obj]] = {}
    for space, objs in spaces.items():
        misplaced = [o for o in objs if _out_of_scope(o, kinds)]
        out[space] = _rescoped(objs, misplaced, problems) if misplaced else objs
    return out, problems


def _out_of_scope(obj: Obj, kinds: KindTable) -> bool:
    info = kinds.lookup(obj.group, obj.kind)
    return info is not None and info.namespaced != bool(obj.namespace)


def _rescoped(objs: list[Obj], misplaced: list[Obj], problems: list[Problem]) -> list[Obj]:
    """`objs` with each of `misplaced` moved into its scope, in identity order."""
    moving = {id(o) for o in misplaced}
    seen: dict[ObjRef, Obj] = {o.ref: o for o in objs if id(o) not in moving}
    for obj in misplaced:
        moved = _in_namespace(obj, "" if obj.namespace else DEFAULT_NAMESPACE)
        problems.append(_warning(moved, _scope_warning(obj)))
        first = seen.get(moved.ref)
        if first is not None:
            problems.append(Problem(obj.origin, f"{moved.ref} is defined twice: here and at {first.origin}"))
            continue
        seen[moved.ref] = moved
    return [seen[ref] for ref in sorted(seen, key=ref_order)]


def _scope_warning(obj: Obj) -> str:
    if obj.namespace:
        return (f"{obj.kind} {obj.name} is cluster-scoped: its metadata.namespace {obj.namespace!r} is ignored, as "
                "the API server ignores it (remove it)")
    return (f"{obj.kind} {obj.name} has no metadata.namespace: read in namespace {DEFAULT_NAMESPACE}, where kubectl "
            "apply puts it with a default context; write the namespace")


def _in_namespace(obj: Obj, namespace: str) -> Obj:
    """A copy of `obj` in `namespace` ("": in none, without `metadata.namespace`)."""
    metadata = {k: v for k, v in obj.metadata.items() if k != "namespace"}
    if namespace:
        metadata["namespace"] = namespace
    return Obj(obj.space, {**obj.body, "metadata": metadata}, obj.origin, obj.key)


def _mailbox_problems(spaces: dict[str, list[Obj]]) -> list[Problem]:
    """Two SyncTargets whose mailbox names are equal, or a mailbox name that is a source space."""
    problems = []
    owners: dict[str, Obj] = {}
    for space, objs in sorted(spaces.items()):
        for st in objs:
            if st.kind != "SyncTarget" or st.group != "edge.kubestellar.io":
                continue
            mailbox = mailbox_name(space, st.name)
            first = owners.setdefault(mailbox, st)
            if first is not st:
                problems.append(Problem(st.origin, f"SyncTarget {space}/{st.name} and SyncTarget {first.space}/"
                                                   f"{first.name} (at {first.origin}) would share the mailbox space "
                                                   f"{mailbox}; rename one of them"))
            elif spaces.get(mailbox):  # an empty folder of that name is no space (git keeps none)
                problems.append(Problem(st.origin, f"mailbox space {mailbox} collides with the space spaces/{mailbox}"))
    return problems
