"""Stages 4-5 per WEC: which objects land in a mailbox, and each one's customization patch.

Work is shared wherever inputs are equal: WECs reached by the same placements share one entry set
(and one objects/ tree); a customization is computed once per (object, values of the parameters it
reads). A per-(object, WEC) error keeps the mailbox's previous copy of that object; so do the
objects a frozen WDS placed at its last good state (isolation.py), as its records list them: as
they stand, a file that does not read included (kept.py).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, MutableMapping, NamedTuple

from msgspec import Struct, field
from msgspec.structs import replace

from ...model import Obj, ObjRef, Origin, Problem, is_secret
from ...kinds import KindTable
from ..place.base import Base, implied_namespace, make_base
from ..customize.customizer import CUSTOMIZER_ANNOTATION, EXPAND_ANNOTATION, find_customizer, wants_expansion
from ..customize.params import failing_leaf, referenced_keys
from ..customize.templates import Templates
from ..load.jsonshape import FieldPath
from ..load.locate import FieldLines
from ..load.workload import top_level_fields
from ..place.records import Recorded, RecordedPlacement
from ..serialize import canonical_json
from ..tree import FileTree
from ..place.what import ALONG, Placed
from ..place.where import Destination, Wec
from .customdata import DataCheck, customized_by, data_check
from .customized import Customized, TopCheck, customized_copy, templates_of
from .kept import KeptFiles
from .parameters import placement_sets, set_parameters

Reader = Callable[[str], "bytes | None"]
NAMES_CUSTOMIZER: FieldPath = ("metadata", "annotations", CUSTOMIZER_ANNOTATION)
FROZEN_CLAUSE = -2  # Via.clause of an object a frozen WDS placed at its last good state


class PlacementPlan(Struct, frozen=True):
    """One EdgePlacement with what it selects and where it goes."""

    obj: Obj
    spec: dict[str, Any]
    placed: tuple[Placed, ...]
    dests: tuple[Destination, ...]
    mailboxes: dict[str, str]  # mailbox -> name of the first (sorted) Location through which it reaches the WEC

    @property
    def key(self) -> tuple[str, str]:
        return (self.obj.space, self.obj.name)


class Via(Struct, frozen=True):
    wds: str
    placement: str
    clause: int  # what.ALONG: a CustomResourceDefinition that came along with its custom resources
    singleton: bool = False  # the placement's wantSingletonReportedState (never for a CRD along)


class Entry(Struct, frozen=True):
    """One object in one mailbox: base bytes, optional patch bytes, and why it is there."""

    base: Base
    data: bytes
    patch: bytes | None = None
    via: tuple[Via, ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    kept: bool = False

    @property
    def rel(self) -> str:
        return self.base.rel

    @property
    def wants_singleton(self) -> bool:
        """The singleton reported-state wish: OR over the placements that put it here."""
        return any(v.singleton for v in self.via)

    def customized(self, patch: bytes | None, params: tuple[tuple[str, str], ...]) -> Entry:
        """This entry with its customization (dataclasses.replace costs ~10 µs, for every
        customized object on every WEC)."""
        return Entry(self.base, self.data, patch, self.via, params, self.kept)


class MailboxPlan(Struct):
    wec: Wec
    placements: tuple[PlacementPlan, ...]
    entries: dict[str, Entry]
    group: tuple[tuple[str, str], ...] = ()
    problems: list[Problem] = field(default_factory=list)
    shared: bool = True  # `entries` is the group's dict object (copied before any change)
    altered: bool = False  # an error removed an entry or put a previous copy in place
    frozen: tuple[RecordedPlacement, ...] = ()  # frozen placements whose last good objects are kept here


class MailboxBuilder:
    """Builds MailboxPlans, caching everything that WECs have in common."""

    def __init__(self, kinds: KindTable, customizers: Mapping[str, Mapping[tuple[str, str], Obj]],
                 read_previous: Reader, memo: MutableMapping[Any, Any] | None = None,
                 lines: FieldLines | None = None) -> None:
        self._kinds = kinds
        self._lines = lines  # a problem about one field of an object is reported at that field's line
        self._memo = memo if memo is not None else {}
        self._bases: dict[int, Base] = {}
        self._customizers = customizers
        self._kept = KeptFiles(read_previous, kinds)
        self._groups: dict[tuple[tuple[str, str], ...], _Group] = {}
        self._custom: dict[tuple[int, tuple[tuple[str, str | None], ...]], Customized] = {}
        self._customizer_keys: dict[tuple[int, bool], frozenset[str]] = {}
        self._how: dict[int, _How] = {}
        self._percent = True  # whether a parameter of the WEC being built holds `%`

    def build(self, wec: Wec, plans: list[PlacementPlan], frozen: list[RecordedPlacement] | None = None
              ) -> MailboxPlan:
        group_key = tuple(p.key for p in plans)
        if group_key not in self._groups:
            self._groups[group_key] = _group(plans, self._base)
        entries, conflicts, customizable, sets = self._groups[group_key]
        plan = MailboxPlan(wec, tuple(plans), entries, group_key)
        params = set_parameters(wec, plans, sets)
        # once per WEC, not per copy: labels never hold `%`, so only a Location's annotations can
        self._percent = bool(customizable) and any("%" in "".join(p.values()) for p in params)
        for rel, entry, at in customizable:
            self._customize(plan, rel, entry, params[at])
        for base, message in conflicts:
            self._fail(plan, Entry(base, base.data), message)
        if frozen:
            self._keep_frozen(plan, frozen)
        return plan

    def kept_whole(self, mailbox: str, files: FileTree, why: str, fix: str) -> list[Problem]:
        """The warnings of a mailbox a frozen part keeps whole (KeptFiles.whole)."""
        return self._kept.whole(mailbox, files, why, fix)

    def _keep_frozen(self, plan: MailboxPlan, frozen: list[RecordedPlacement]) -> None:
        """Each recorded object of the frozen placements, as the mailbox holds it now (a missing
        file is not there: nothing is invented); implied Namespaces recomputed over all entries."""
        entries = self._own(plan)
        plan.altered, plan.frozen = True, tuple(frozen)
        plan.group = plan.group + tuple((f"{p.space} (frozen)", p.name) for p in frozen)
        for placement in frozen:
            for item in placement.objects:
                kept = self._kept_copy(plan, item, placement)
                if kept is None:
                    continue
                present = entries.get(item.rel)
                if present is not None and present.base.obj is not None:
                    plan.problems.append(Problem(
                        present.base.obj.origin, f"{present.base.ref}: placed by two workload description spaces: "
                        f"{present.base.obj.origin} and the frozen space {placement.space}; keeping the previous copy",
                        wec=plan.wec.mailbox, obj=str(present.base.ref)))
                elif present is not None and present.kept:
                    kept = replace(kept, via=present.via + kept.via)
                entries[item.rel] = kept
        for ns in sorted({e.base.ref.namespace for e in entries.values() if e.base.ref.namespace}):
            implied = implied_namespace(ns)
            entries.setdefault(implied.rel, Entry(implied, implied.data))
        plan.entries = dict(sorted(entries.items()))

    def _kept_copy(self, plan: MailboxPlan, item: Recorded, placement: RecordedPlacement) -> Entry | None:
        data, patch = self._kept.files(plan.wec.mailbox, item.rel)
        if data is None:
            return None
        base = self._kept.base(plan.wec.mailbox, item, data)
        if base is None:
            return None
        problem = self._kept.trouble(plan.wec.mailbox, item.rel, data, patch, item.text,
                                     f"space {placement.space} is frozen", "the space's errors are fixed")
        if problem is not None:
            plan.problems.append(problem)
        via = Via(placement.space, placement.name, ALONG if item.along else FROZEN_CLAUSE,
                  placement.singleton and not item.along)
        return Entry(base, data, patch, (via,), kept=True)

    def _customize(self, plan: MailboxPlan, rel: str, entry: Entry, params: Mapping[str, str]) -> None:
        base = entry.base
        how = self._how.get(id(base))
        if how is None:
            self._how[id(base)] = how = self._how_to_customize(base)
        values = tuple([(k, params.get(k)) for k in how.needed])
        cache_key = (id(base), values)
        if cache_key not in self._custom:
            self._custom[cache_key] = (Customized(None, how.error) if how.error else
                                       customized_copy(base, how.customizer, params, how.needed, how.templates,
                                                       how.data, how.top, self._percent))
        patch, error, warnings = self._custom[cache_key]
        assert base.obj is not None
        for warning in warnings:
            plan.problems.append(Problem(base.obj.origin, f"{base.ref}: {warning}", "warning",
                                         plan.wec.mailbox, str(base.ref)))
        if error:
            self._fail(plan, entry, error, NAMES_CUSTOMIZER if how.error else self._expanding(base, error, params))
            return
        if how.literal:
            self._literal_warnings(plan, base, how, params)
        used = tuple([(k, v) for k, v in values if v is not None])
        if patch is not None or used:
            self._own(plan)[rel] = entry.customized(patch, used)

    def _literal_warnings(self, plan: MailboxPlan, base: Base, how: _How, params: Mapping[str, str]) -> None:
        """A Customizer without expand-parameters puts its `%(key)` as written: surely not meant
        when the WEC's Location has that key (a Secret's copy: the keys are not named)."""
        keys = [key for key in how.literal if key in params]
        if not keys or how.customizer is None or base.obj is None:
            return
        customizer = how.customizer
        secret = is_secret(base.body)
        refs = "a %(key)" if secret else ", ".join(f"%({key})" for key in keys)
        which = "that key is" if secret else ", ".join(keys) + (" is" if len(keys) == 1 else " are")
        plan.problems.append(Problem(self._origin(base.obj, NAMES_CUSTOMIZER), (
            f"{base.ref}: Customizer {customizer.namespace}/{customizer.name} ({customizer.origin}) puts {refs} as "
            f"written (it has no {EXPAND_ANNOTATION}: \"true\" annotation), though {which} a label or annotation "
            "of the WEC's Location"), "warning", plan.wec.mailbox, str(base.ref)))

    def _how_to_customize(self, base: Base) -> _How:
        assert base.obj is not None
        customizer, error = find_customizer(base.obj, self._customizers.get(base.obj.space, {}))
        needed = base.object_keys | (self._keys_of(customizer, True) if customizer is not None else frozenset())
        literal = self._keys_of(customizer, False) if customizer is not None else frozenset()
        templates = templates_of(base) if base.expand and customizer is None else None
        top = None
        if self._kinds.is_builtin(base.ref.group, base.ref.kind) and customizer is not None:
            top = TopCheck(base.ref.kind, top_level_fields(base.ref.group, base.ref.kind),
                           customized_by(base, customizer))
        return _How(customizer, error, tuple(sorted(needed)), templates, data_check(base, customizer), top,
                    tuple(sorted(literal)))

    def _base(self, obj: Obj) -> Base:
        """The base copy of an object, made on first use (a reused mailbox never needs one)."""
        base = self._bases.get(id(obj))
        if base is None:
            info = self._kinds.lookup(obj.group, obj.kind)
            assert info is not None  # select() skips unknown kinds and validate rejects them
            key = ("base", obj.key, obj.origin, info) if obj.key else None
            base = self._memo.get(key) if key else None
            if base is None:
                base = make_base(obj, info)
                if key:
                    self._memo[key] = base
            self._bases[id(obj)] = base = replace(base, obj=obj)
        return base

    def _keys_of(self, customizer: Obj, expanded: bool) -> frozenset[str]:
        """The keys of the `%(key)` references in the Customizer's replacements and jsonPatch when
        it expands them (`expanded`), or when it puts them as written (not `expanded`)."""
        key = (id(customizer), expanded)
        if key not in self._customizer_keys:
            body = {k: customizer.body.get(k) for k in ("replacements", "jsonPatch")}
            self._customizer_keys[key] = referenced_keys(body) if wants_expansion(customizer.annotations) == expanded \
                else frozenset()
        return self._customizer_keys[key]

    @staticmethod
    def _expanding(base: Base, error: str, params: Mapping[str, str]) -> FieldPath:
        """The field an error of the object's own expand-parameters is about: the first string
        that does not expand, else the annotation (none: an error of its Customizer's)."""
        if not error.startswith(EXPAND_ANNOTATION):
            return ()
        return failing_leaf(base.body, params) or ("metadata", "annotations", EXPAND_ANNOTATION)

    def _origin(self, obj: Obj, at: FieldPath) -> Origin:
        line = self._lines.line(obj.key, obj.origin, at) if self._lines is not None and at else 0
        return Origin(obj.origin.path, line) if line else obj.origin

    def _fail(self, plan: MailboxPlan, entry: Entry, message: str, at: FieldPath = ()) -> None:
        """A per-(object, WEC) error (about the field `at` of the object): report it and keep the
        previous copy (or none)."""
        base = entry.base
        assert base.obj is not None
        kept = self._previous(plan, entry)
        outcome = "keeping the previous copy" if kept else "not placed (no previous copy)"
        plan.problems.append(Problem(self._origin(base.obj, at), f"{base.ref}: {message}; {outcome}",
                                     wec=plan.wec.mailbox, obj=str(base.ref)))
        entries = self._own(plan)
        plan.altered = True
        if kept is None:
            entries.pop(entry.rel, None)
        else:
            entries[entry.rel] = kept
            plan.entries = dict(sorted(entries.items()))  # a conflict's copy was not in the dict

    def _previous(self, plan: MailboxPlan, entry: Entry) -> Entry | None:
        data, patch = self._kept.files(plan.wec.mailbox, entry.rel)
        if data is None:
            return None
        problem = self._kept.trouble(plan.wec.mailbox, entry.rel, data, patch, str(entry.base.ref),
                                     "the object has an error on this WEC", "that error is fixed")
        if problem is not None:
            plan.problems.append(problem)
        return replace(entry, data=data, patch=patch, kept=True, params=())

    def _own(self, plan: MailboxPlan) -> dict[str, Entry]:
        if plan.shared:
            plan.entries = dict(plan.entries)
            plan.shared = False
        return plan.entries


class _Group(NamedTuple):
    """What the WECs reached by the same placements share: the merged entries (never mutated: a
    mailbox copies them before its first change), the conflicts, the entries to customize, each
    with the index of the set of placements that placed it (parameters.placement_sets)."""

    entries: dict[str, Entry]
    conflicts: list[tuple[Base, str]]
    customizable: tuple[tuple[str, Entry, int], ...]
    sets: tuple[tuple[int, ...], ...]


def _group(plans: list[PlacementPlan], base_of: Callable[[Obj], Base]) -> _Group:
    merged, conflicts = _merge(plans, base_of)
    customizable = [(rel, entry) for rel, entry in merged.items() if entry.base.customizable]
    at, sets = placement_sets(plans, ([(v.wds, v.placement) for v in e.via] for _, e in customizable))
    return _Group(merged, conflicts, tuple((rel, e, i) for (rel, e), i in zip(customizable, at)), sets)


class _How(NamedTuple):
    """How one object is customized on every WEC: its Customizer (or the error naming it), the
    parameters it reads (sorted), its templated strings when the fast path may serve it, and the
    checks of its customized copies (a ConfigMap's or a Secret's data, a built-in kind's top level)."""

    customizer: Obj | None
    error: str | None
    needed: tuple[str, ...]
    templates: Templates | None
    data: DataCheck | None = None
    top: TopCheck | None = None  # a built-in kind's top-level fields, when a Customizer may add one
    literal: tuple[str, ...] = ()  # keys of the `%(key)` a Customizer without expand-parameters puts as written


def _merge(plans: list[PlacementPlan], base_of: Callable[[Obj], Base]
           ) -> tuple[dict[str, Entry], list[tuple[Base, str]]]:
    """OR across placements; two WDSes placing one identity is a conflict; implied Namespaces."""
    chosen: dict[ObjRef, tuple[Obj, list[Via]]] = {}
    conflicts: dict[ObjRef, str] = {}
    for plan in plans:
        for placed in plan.placed:
            wish = placed.clause != ALONG and plan.spec.get("wantSingletonReportedState") is True
            via = Via(plan.obj.space, plan.obj.name, placed.clause, wish)
            ref = placed.obj.ref
            if ref in chosen and chosen[ref][0] is not placed.obj:
                other = chosen[ref][0]
                conflicts[ref] = (f"placed by two workload description spaces: {other.origin} "
                                  f"and {placed.obj.origin}")
                continue
            chosen.setdefault(ref, (placed.obj, []))[1].append(via)
    entries: dict[str, Entry] = {}
    for ref, (obj, vias) in chosen.items():
        if ref not in conflicts:
            base = base_of(obj)
            entries[base.rel] = Entry(base, base.data, via=tuple(vias))
    for ns in sorted({ref.namespace for ref in chosen if ref.namespace}):
        implied = implied_namespace(ns)
        if implied.ref not in chosen:
            entries.setdefault(implied.rel, Entry(implied, implied.data))
    failed = [(base_of(chosen[ref][0]), message) for ref, message in sorted(conflicts.items())]
    return dict(sorted(entries.items())), failed


def upsync_sets(plans: Iterable[Any]) -> list[Any]:
    """Union of the placements' upsync sets, deduplicated and sorted."""
    unique = {canonical_json(u): u for p in plans for u in (p.spec.get("upsync") or [])}
    return [unique[k] for k in sorted(unique)]
