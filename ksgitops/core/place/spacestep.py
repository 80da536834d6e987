"""The space step of a reconcile: discovered spaces' Space objects written into their folders, and
the marker of a folder the space manager made (spaces.py has the state machine it runs)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from msgspec import Struct

from ...model import Obj, Origin, Problem
from ...names import dns1123_label_error
from ..load.read import INVENTORY_ANNOTATION, SPACE_API, Loaded
from ..load.parse import parse_file
from ..serialize import dump_yaml
from ..load.snapshot import GENERATED_DIR, Snapshot
from .spaces import (CREATE_SPACE, DEFAULT_PROVIDER, DELETE_SPACE, WRITE_OBJECT, Observed, Plan, ProviderDesc,
                     SpaceObj, inputs_from, plan, providers_by_name, space_body)
from .where import Wec

SPACE_DIR = "space"  # a discovered space's Space object: spaces/<space>/.ksgitops/space/space.yaml
# The managed marker of a git space ksgitops created (GitFolderProvider.create): a managed Space in
# spaces/<space>/.ksgitops/managed-space.yaml. Under .ksgitops/ it is never input, so it neither
# duplicates the Space object (which lives in another space) nor keeps the space alive once the
# object is gone. Mailboxes carry theirs in space.yaml (with the sync-target annotation).
MANAGED_MARKER = f"{GENERATED_DIR}/managed-space.yaml"


def is_managed_marker(data: bytes | None, name: str) -> bool:
    """`data` (a marker file's bytes) holds one managed Space named `name`."""
    if data is None:
        return False
    parsed = parse_file(f"spaces/{name}/{MANAGED_MARKER}", data)
    if parsed.problems or len(parsed.docs) != 1:
        return False
    body = parsed.docs[0][1]
    spec, md = body.get("spec"), body.get("metadata")
    return (body.get("apiVersion") == SPACE_API and body.get("kind") == "Space" and isinstance(spec, dict)
            and spec.get("Type") == "managed" and isinstance(md, dict) and md.get("name") == name)


class SpaceStep(Struct):
    """The space step's outcome: the plan, the generated roots it owns (one per source space:
    the discovered Space object, or None), and problems (errors are fatal, as in validation)."""

    plan: Plan
    generated: dict[str, Any]
    problems: list[Problem]


def space_step(snapshot: Snapshot, loaded: Loaded, spaces: Mapping[str, list[Obj]], wecs: Mapping[str, Wec],
               skipped: Iterable[str] = ()) -> SpaceStep:
    """Plan over this repository (the git providers observe its folders; kubeconfig providers are
    not observed here: that is the SpaceManager's job) and carry out what belongs to reconcile:
    a discovered folder gets its unmanaged Space object in `.ksgitops/space/space.yaml`. Mailbox
    creation and removal are the plan's CreateSpace/DeleteSpace of managed spaces owned by
    SyncTargets, which emit already does; other git spaces are never created or deleted by
    reconcile (a warning says what to do)."""
    skipped = set(skipped)
    found = inputs_from(spaces)
    objects = list(found.objects)
    steady = _steady(found.objects, found.providers, wecs, loaded.mailboxes, skipped)
    for mailbox, wec in wecs.items():
        if mailbox not in steady:
            objects.append(SpaceObj(mailbox, "managed", DEFAULT_PROVIDER.name, "Ready",
                                    f"SyncTarget {wec.space}/{wec.name}", origin=wec.sync_target.origin))
    folders = [Observed(name, "Ready", True) for name, obj in loaded.mailboxes.items()
               if obj.annotations.get(INVENTORY_ANNOTATION) not in skipped and name not in steady]
    for name, objs in loaded.spaces.items():
        marked = is_managed_marker(snapshot.read(f"spaces/{name}/{MANAGED_MARKER}"), name)
        if marked or objs or snapshot.space_files(name):  # a folder holding only .ksgitops/ is gone
            folders.append(Observed(name, "Ready", marked))
    descs = providers_by_name(found.providers, [])
    observed = {name: (folders if desc.type == "git" else None) for name, desc in descs.items()}
    p = plan(objects, found.providers, observed)
    problems = list(p.problems)
    generated: dict[str, Any] = {f"spaces/{s}/{GENERATED_DIR}/{SPACE_DIR}": None
                                 for s in loaded.spaces if s not in skipped}
    origins = {o.name: o.origin for o in objects}
    for a in p.actions:
        git = descs[a.provider].type == "git"
        if a.op == WRITE_OBJECT and git:
            root = f"spaces/{a.space}/{GENERATED_DIR}/{SPACE_DIR}"
            if root in generated:
                generated[root] = {"space.yaml": dump_yaml(space_body(a.space_obj()))}
        elif a.op in (CREATE_SPACE, DELETE_SPACE) and a.space not in wecs and a.space not in loaded.mailboxes:
            verb = "create the folder" if a.op == CREATE_SPACE else "remove the folder"
            problems.append(Problem(origins.get(a.space, Origin(f"spaces/{a.space}")),
                                    f"Space {a.space}: {verb} spaces/{a.space} with `ksgitops spaces --apply` "
                                    "(reconcile creates and deletes mailbox spaces only)", "warning"))
    return SpaceStep(p, generated, sorted(set(problems)))


def _steady(objects: list[SpaceObj], providers: list[ProviderDesc], wecs: Mapping[str, Wec],
            mailboxes: Mapping[str, Obj], skipped: set[str]) -> set[str]:
    """The mailboxes the plan has nothing to say about, left out of it (a fleet's thousand): a
    SyncTarget's, whose folder is there, named by no Space object, while the git provider is
    ksgitops' own. Each would be a managed Space of that provider, Ready, over a folder it made,
    Ready: no action, no problem, and no other Space or folder it could meet."""
    if any(desc.name == DEFAULT_PROVIDER.name for desc in providers):
        return set()
    named = {obj.name for obj in objects}
    return {mb for mb in wecs if mb in mailboxes and mb not in named and dns1123_label_error(mb) is None
            and mailboxes[mb].annotations.get(INVENTORY_ANNOTATION) not in skipped}


__all__ = ["space_step", "SpaceStep", "SPACE_DIR", "MANAGED_MARKER", "is_managed_marker", "plan", "Plan",
           "SpaceObj", "ProviderDesc", "Observed", "DEFAULT_PROVIDER", "CREATE_SPACE", "DELETE_SPACE",
           "WRITE_OBJECT", "SPACE_API", "space_body", "inputs_from"]
