"""Stage 1b: validation of loaded objects. Every problem found here is fatal (nothing is written).

Control kinds are checked against the JSON Schemas in schema/; every object gets name, namespace,
label and kind checks; names that become paths must be DNS-1123 so no path escapes the repo.
"""
from __future__ import annotations

import hashlib
from typing import Any, Iterable, MutableMapping

from ..kinds import KindTable, is_control
from ..model import Obj, Problem
from ..names import dns1123_label_error, dns1123_subdomain_error
from .customize import wants_expansion
from .schemas import validate_schema
from .serialize import canonical_json
from .selectors import label_key_error, label_value_error, selector_error
from .what import selector_problems
from .where import mailbox_name

PLACEMENT_KINDS = ("EdgePlacement",)


def validate(spaces: dict[str, list[Obj]], kinds: KindTable,
             memo: MutableMapping[Any, tuple[Problem, ...]] | None = None) -> list[Problem]:
    """All fatal problems of the loaded spaces, in a stable order.

    Per-object checks depend only on the object and the kind table, so they are memoized by
    (file content key, line, kind table) when the caller passes a memo (a persistent cache)."""
    memo = {} if memo is None else memo
    kinds_digest = kinds.digest()
    problems: list[Problem] = []
    for objs in spaces.values():
        for obj in objs:
            key = ("validate", obj.key, obj.origin, kinds_digest) if obj.key else None
            found = memo.get(key) if key else None
            if found is None:
                # a file that changed mostly holds objects that did not: find them by content
                content = ("validate-object", _content(obj), obj.origin, kinds_digest)
                found = memo.get(content)
                if found is None:
                    found = memo[content] = tuple(_object_problems(obj, kinds))
                if key:
                    memo[key] = found
            problems.extend(found)
    problems.extend(_mailbox_problems(spaces))
    return sorted(set(problems))


def _content(obj: Obj) -> str:
    return hashlib.blake2b(canonical_json(obj.body), digest_size=20).hexdigest()


def _object_problems(obj: Obj, kinds: KindTable) -> Iterable[Problem]:
    messages: list[str] = []
    info = kinds.lookup(obj.group, obj.kind)
    if is_control(obj):
        yield from validate_schema(obj)
        messages.extend(_control_messages(obj))
    if info is None:
        messages.append(f"unknown kind {obj.kind} in apiVersion {obj.api_version} "
                        "(no built-in mapping, CRD in the repo, or RepoConfig kinds entry)")
    else:
        messages.extend(_scope_messages(obj, info.namespaced))
    error = dns1123_subdomain_error(obj.name)
    if error:
        messages.append(f"{obj.kind} name {error}")
    messages.extend(_metadata_messages(obj.metadata, wants_expansion(obj.annotations)))
    for message in messages:
        yield Problem(obj.origin, message)


def _scope_messages(obj: Obj, namespaced: bool) -> list[str]:
    if not namespaced:
        return [f"cluster-scoped {obj.kind} {obj.name} must not set metadata.namespace"] if obj.namespace else []
    if not obj.namespace:
        return [f"namespaced {obj.kind} {obj.name} needs metadata.namespace"]
    error = dns1123_label_error(obj.namespace)
    return [f"namespace {error}"] if error else []


def _metadata_messages(md: dict[str, Any], expands: bool) -> list[str]:
    messages = []
    for field in ("labels", "annotations"):
        value = md.get(field)
        if value is None:
            continue
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            messages.append(f"metadata.{field} must map strings to strings")
            continue
        for key, item in value.items():
            check_value = field == "labels" and not (expands and "%(" in item)  # expanded per WEC
            error = label_key_error(key) or (label_value_error(item) if check_value else None)
            if error:
                messages.append(f"metadata.{field}: {error}")
    return messages


def _control_messages(obj: Obj) -> list[str]:
    if obj.kind == "EdgePlacement":
        return selector_problems(obj)
    if obj.kind == "Location":
        selector = obj.spec.get("instanceSelector")
        error = selector_error(selector) if selector is not None else None
        return [f"spec.instanceSelector: {error}"] if error else []
    return []


def _mailbox_problems(spaces: dict[str, list[Obj]]) -> list[Problem]:
    problems = []
    for space, objs in spaces.items():
        for st in objs:
            if st.kind != "SyncTarget" or st.group != "edge.kubestellar.io":
                continue
            mailbox = mailbox_name(space, st.name)
            error = dns1123_label_error(mailbox)
            if error:
                problems.append(Problem(st.origin, f"mailbox space name {error}; shorten the SyncTarget name"))
            elif spaces.get(mailbox):  # an empty folder of that name is no space (git keeps none)
                problems.append(Problem(st.origin, f"mailbox space {mailbox} collides with the space spaces/{mailbox}"))
    return problems
