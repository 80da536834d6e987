"""Stage 2: the space manager's state machine, over plain data (docs/REFERENCE.md, "Space";
docs/SPACES.md has the state machine and the space step of reconcile).

`plan(objects, providers, observed)` compares the Space objects that exist with the spaces the
providers report and returns the actions that bring the two together:

- a **managed** Space object without its space -> CreateSpace (phase Initializing);
- a managed space whose object is gone (or is being deleted) -> DeleteSpace, and only then is the
  object released (DeleteSpaceObject): finalizer semantics, a managed space is never orphaned and
  never deleted while its object exists;
- a space that matches its provider's `SpacePrefixForDiscovery` and has no object ->
  WriteSpaceObject (Type unmanaged); an **unmanaged** space that disappeared -> DeleteSpaceObject;
- **imported** spaces are never created nor deleted: only their phase is followed;
- phases: Initializing (created, not yet ready), Ready (observed and healthy), NotReady (observed
  but unhealthy, missing while imported, or its provider unreachable) -> SetPhase when different.

"Managed" on the provider side is a marker the provider keeps on spaces ksgitops created (the git
provider: a `space.yaml` holding a managed Space, as every mailbox has). An unreachable provider
(observed listing None) changes nothing but phases: nothing is created, deleted or forgotten on
the strength of a failed listing.

Everything is pure and deterministic: the input order never matters, and `simulate(plan, ...)`
(the world after a successful plan) planned again gives an empty plan.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from msgspec import Struct, field
from msgspec.structs import replace

from ...model import Obj, Origin, Problem
from ...names import dns1123_label_error
from ..load.read import SPACE_API

SPACE_NAME_ANNOTATION = "space.kubestellar.io/space-name"  # set by the space-aware client (io)

SPACE_TYPES: tuple[str, ...] = ("managed", "unmanaged", "imported")
PHASES: tuple[str, ...] = ("Initializing", "Ready", "NotReady")
PROVIDER_TYPES: tuple[str, ...] = ("git", "kubeconfig")
CAN_CREATE: frozenset[str] = frozenset({"git"})  # provider types whose spaces ksgitops creates and deletes

CREATE_SPACE = "CreateSpace"
DELETE_SPACE = "DeleteSpace"
DELETE_OBJECT = "DeleteSpaceObject"
WRITE_OBJECT = "WriteSpaceObject"
SET_PHASE = "SetPhase"
_OP_ORDER = {CREATE_SPACE: 0, DELETE_SPACE: 1, DELETE_OBJECT: 2, WRITE_OBJECT: 3, SET_PHASE: 4}


class ProviderDesc(Struct, frozen=True, order=True):
    """A SpaceProviderDesc: `prefix` is SpacePrefixForDiscovery ("" = no discovery); `config` is
    provider-specific (git: a work tree path, kubeconfig: a kubeconfig file path)."""

    name: str
    type: str = "git"
    prefix: str = ""
    config: str = ""
    origin: Origin = Origin("")


DEFAULT_PROVIDER = ProviderDesc("git", "git")  # always there; a SpaceProviderDesc named git replaces it


class SpaceObj(Struct, frozen=True, order=True):
    """A Space object. `phase` is its status.Phase ("" = none yet); `owner` names what it comes
    and goes with (mailbox spaces: their SyncTarget); `deleting` is a requested deletion
    (metadata.deletionTimestamp) that the finalizer holds until the space is gone."""

    name: str
    type: str = "managed"
    provider: str = DEFAULT_PROVIDER.name
    phase: str = ""
    owner: str = ""
    deleting: bool = False
    origin: Origin = Origin("")


class Observed(Struct, frozen=True, order=True):
    """A space as a provider reports it. `managed`: it carries ksgitops' managed marker."""

    name: str
    phase: str = "Ready"
    managed: bool = False


class Action(Struct, frozen=True, order=True):
    op: str
    space: str
    provider: str
    phase: str = ""  # SetPhase: the new phase; WriteSpaceObject: the discovered space's phase

    def __str__(self) -> str:
        tail = f" -> {self.phase}" if self.op == SET_PHASE else ""
        return f"{self.op} {self.space} ({self.provider}){tail}"

    def space_obj(self) -> SpaceObj:
        """The object a WriteSpaceObject writes: unmanaged, with the observed phase."""
        return SpaceObj(self.space, "unmanaged", self.provider, self.phase)


class Plan(Struct, frozen=True):
    """Actions in execution order (by space, then CreateSpace, DeleteSpace, DeleteSpaceObject,
    WriteSpaceObject, SetPhase); a failed action must stop the later ones for the same space."""

    actions: tuple[Action, ...] = ()
    problems: tuple[Problem, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.actions)

    def of(self, op: str) -> list[Action]:
        return [a for a in self.actions if a.op == op]


def plan(objects: Iterable[SpaceObj], providers: Iterable[ProviderDesc],
         observed: Mapping[str, Iterable[Observed] | None]) -> Plan:
    """The actions that reconcile Space objects with the spaces each provider observes.

    `observed[provider]` is that provider's listing, or None (or absent) when it could not be
    listed (unreachable)."""
    problems: list[Problem] = []
    providers = list(providers)
    descs = providers_by_name(providers, problems)
    seen: dict[str, dict[str, Observed] | None] = {}
    for name in descs:
        listing = observed.get(name)
        seen[name] = None if listing is None else {o.name: o for o in sorted(listing)}
    objects = list(objects)
    objs = _objects(objects, descs, problems, list(providers))
    actions: list[Action] = []
    released: set[str] = set()
    deleted: set[tuple[str, str]] = set()
    for name in sorted(objs):
        obj = objs[name]
        found = _object_actions(obj, descs[obj.provider], seen[obj.provider], problems)
        actions.extend(found)
        released.update(a.space for a in found if a.op == DELETE_OBJECT)
        deleted.update((a.provider, a.space) for a in found if a.op == DELETE_SPACE)
    chosen = {id(o) for o in objs.values()}
    # a name any other object holds (a duplicate, an unknown provider) is protected all the same
    remaining = (set(objs) - released) | {o.name for o in objects if id(o) not in chosen}
    actions.extend(_unclaimed_actions(seen, descs, remaining, deleted, problems))
    actions.sort(key=lambda a: (a.space, _OP_ORDER[a.op], a.provider))
    return Plan(tuple(actions), tuple(sorted(set(problems))))


def _unclaimed_actions(seen: Mapping[str, dict[str, Observed] | None], descs: Mapping[str, ProviderDesc],
                       remaining: set[str], deleted: set[tuple[str, str]], problems: list[Problem]) -> list[Action]:
    """For the observed spaces no Space object holds: delete the ones ksgitops made (their object
    is gone), discover the ones a provider's prefix claims (first provider by name wins)."""
    actions: list[Action] = []
    claimed: dict[str, str] = {}
    for pname in sorted(seen):
        spaces = seen[pname]
        if spaces is None:
            continue
        desc = descs[pname]
        for name, space in spaces.items():
            if name in remaining or (pname, name) in deleted:
                continue
            if space.managed:  # ours, and its object is gone: never left orphaned
                if desc.type in CAN_CREATE:
                    actions.append(Action(DELETE_SPACE, name, pname))
                continue
            if not desc.prefix or not name.startswith(desc.prefix) or dns1123_label_error(name):
                continue
            if name in claimed:
                problems.append(Problem(Origin(f"spaceprovider {pname}"), f"space {name} is discovered by "
                                        f"providers {claimed[name]} and {pname}; {claimed[name]} has it",
                                        "warning"))
                continue
            claimed[name] = pname
            actions.append(Action(WRITE_OBJECT, name, pname, space.phase))
    return actions


def providers_by_name(providers: Iterable[ProviderDesc], problems: list[Problem]) -> dict[str, ProviderDesc]:
    """The providers ksgitops drives, by name; other ProviderTypes (KubeStellar's kcp, kind,
    kubeflex) are valid input, reported where a Space uses them."""
    descs: dict[str, ProviderDesc] = {}
    for desc in sorted(providers, key=lambda d: (d.name, d.origin, d)):
        if desc.type not in PROVIDER_TYPES:
            continue
        first = descs.get(desc.name)
        if first is not None:
            problems.append(Problem(desc.origin, f"SpaceProviderDesc {desc.name} is defined twice: here and at "
                                    f"{first.origin}"))
            continue
        descs[desc.name] = desc
    descs.setdefault(DEFAULT_PROVIDER.name, DEFAULT_PROVIDER)
    return descs


def _objects(objects: Iterable[SpaceObj], descs: dict[str, ProviderDesc], problems: list[Problem],
             providers: list[ProviderDesc]) -> dict[str, SpaceObj]:
    objs: dict[str, SpaceObj] = {}
    for obj in sorted(objects, key=lambda o: (o.name, o.origin, o)):
        error = dns1123_label_error(obj.name)
        if error:
            problems.append(Problem(obj.origin, f"Space name {error}: a space is a folder named by a DNS-1123 "
                                                "label; the Space is left alone", "warning"))
            continue
        if obj.type not in SPACE_TYPES:
            problems.append(Problem(obj.origin, f"Space {obj.name}: unknown Type {obj.type!r} "
                                    f"(one of {', '.join(SPACE_TYPES)})"))
            continue
        if obj.provider not in descs:
            types = " / ".join(sorted({repr(d.type) for d in providers if d.name == obj.provider}))
            why = (f"its SpaceProviderDesc {obj.provider} has ProviderType {types}, which ksgitops does not drive "
                   f"(it drives {', '.join(PROVIDER_TYPES)})" if types else
                   f"unknown SpaceProviderDesc {obj.provider!r} (known: {', '.join(sorted(descs))})")
            problems.append(Problem(obj.origin, f"Space {obj.name}: {why}: the Space is left alone", "warning"))
            continue
        first = objs.get(obj.name)
        if first is not None:
            where = f" and at {first.origin}" if first.origin.path else f" and by {first.owner or 'ksgitops'}"
            problems.append(Problem(obj.origin, f"Space {obj.name} is defined twice: here{where}"))
            continue
        objs[obj.name] = obj
    return objs


def _object_actions(obj: SpaceObj, desc: ProviderDesc, listing: dict[str, Observed] | None,
                    problems: list[Problem]) -> list[Action]:
    kind = obj.type
    if kind == "managed" and desc.type not in CAN_CREATE:
        problems.append(Problem(obj.origin, f"Space {obj.name}: provider {desc.name} ({desc.type}) cannot create "
                                "or delete spaces (clusters are provisioned outside ksgitops); use Type "
                                "unmanaged or imported"))
        kind = "imported"
    here = None if listing is None else listing.get(obj.name)
    act: list[Action] = []
    if obj.deleting:
        if kind == "managed":
            if listing is None:  # cannot delete the space now: the finalizer keeps the object
                return _phase(obj, desc, "NotReady")
            if here is not None:
                act.append(Action(DELETE_SPACE, obj.name, desc.name))
        return act + [Action(DELETE_OBJECT, obj.name, desc.name)]
    if listing is None:
        return _phase(obj, desc, "NotReady")
    if kind == "managed":
        if here is None:
            return [Action(CREATE_SPACE, obj.name, desc.name)] + _phase(obj, desc, "Initializing")
        return _phase(obj, desc, here.phase)
    if kind == "unmanaged":
        if here is None:
            return [Action(DELETE_OBJECT, obj.name, desc.name)]
        return _phase(obj, desc, here.phase)
    return _phase(obj, desc, here.phase if here is not None else "NotReady")


def _phase(obj: SpaceObj, desc: ProviderDesc, phase: str) -> list[Action]:
    return [] if obj.phase == phase else [Action(SET_PHASE, obj.name, desc.name, phase)]


def simulate(p: Plan, objects: Iterable[SpaceObj], observed: Mapping[str, Iterable[Observed] | None],
             ) -> tuple[list[SpaceObj], dict[str, list[Observed] | None]]:
    """The world after every action of `p` succeeded: a created space is there, Initializing,
    with the managed marker (a provider reports it Ready once it is)."""
    objs = {o.name: o for o in sorted(objects, key=lambda o: (o.name, o.origin, o), reverse=True)}
    world: dict[str, dict[str, Observed] | None] = {
        name: None if listing is None else {o.name: o for o in listing} for name, listing in observed.items()}
    for a in p.actions:
        spaces = world.get(a.provider)
        if a.op == CREATE_SPACE and spaces is not None:
            spaces[a.space] = Observed(a.space, "Initializing", managed=True)
        elif a.op == DELETE_SPACE and spaces is not None:
            spaces.pop(a.space, None)
        elif a.op == DELETE_OBJECT:
            objs.pop(a.space, None)
        elif a.op == WRITE_OBJECT:
            objs[a.space] = a.space_obj()
        elif a.op == SET_PHASE and a.space in objs:
            objs[a.space] = replace(objs[a.space], phase=a.phase)
    return (sorted(objs.values()),
            {name: None if spaces is None else sorted(spaces.values()) for name, spaces in world.items()})


# ---- Space and SpaceProviderDesc objects <-> plain data

def is_space(obj: Obj) -> bool:
    return obj.api_version == SPACE_API and obj.kind == "Space"


def is_provider_desc(obj: Obj) -> bool:
    return obj.api_version == SPACE_API and obj.kind == "SpaceProviderDesc"


def space_from(obj: Obj, owner: str = "") -> SpaceObj:
    """A Space object (schema-valid) as plain data; no SpaceProviderDescName = the default provider."""
    spec = obj.spec
    status = obj.body.get("status")
    phase = status.get("Phase") if isinstance(status, dict) else None
    return SpaceObj(obj.name, str(spec.get("Type") or "managed"),
                    str(spec.get("SpaceProviderDescName") or DEFAULT_PROVIDER.name),
                    phase if isinstance(phase, str) else "", owner,
                    obj.metadata.get("deletionTimestamp") is not None, obj.origin)


def provider_from(obj: Obj) -> ProviderDesc:
    spec = obj.spec
    return ProviderDesc(obj.name, str(spec.get("ProviderType") or "git"),
                        str(spec.get("SpacePrefixForDiscovery") or ""), str(spec.get("Config") or ""), obj.origin)


def space_body(obj: SpaceObj, annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The Space object to write (e.g. for a discovered space), status included when known."""
    metadata: dict[str, Any] = {"name": obj.name}
    if annotations:
        metadata["annotations"] = dict(annotations)
    body: dict[str, Any] = {"apiVersion": SPACE_API, "kind": "Space", "metadata": metadata,
                            "spec": {"SpaceProviderDescName": obj.provider, "Type": obj.type}}
    if obj.phase:
        body["status"] = {"Phase": obj.phase}
    return body


class SpaceInputs(Struct):
    """What reconcile knows about spaces: objects and provider descs from the source spaces."""

    objects: list[SpaceObj] = field(default_factory=list)
    providers: list[ProviderDesc] = field(default_factory=list)


def inputs_from(spaces: Mapping[str, Iterable[Obj]]) -> SpaceInputs:
    found = SpaceInputs()
    for objs in spaces.values():
        for obj in objs:
            if is_space(obj):
                found.objects.append(space_from(obj))
            elif is_provider_desc(obj):
                found.providers.append(provider_from(obj))
    return found


# ---- the space step of reconcile (docs/SPACES.md, "In reconcile") over the git provider
