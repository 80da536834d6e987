"""The functional core composed: snapshot -> load -> validate -> where -> what -> customize -> emit.

Pure: the only inputs are the snapshot, a reader of the previous generated files (for kept
copies) and an optional parse cache; the output is data. Fatal problems raise KsgitopsError
before anything could be written.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import __version__
from ..kinds import KindTable, is_control
from ..model import KsgitopsError, Obj, Problem, Progress
from ..names import file_stem
from .emit import INVENTORY_ANNOTATION, Emitter, sps_yaml
from .load import Loaded, ParseCache, load
from .mailbox import MailboxBuilder, MailboxPlan, PlacementPlan
from .problems import problem_files
from .repoconfig import RepoConfig, parse_repo_config
from .snapshot import GENERATED_DIR, Snapshot
from .spaces import Plan, space_step
from .serialize import canonical_json
from .tree import REUSE, Generated
from .validate import validate, with_default_namespaces
from .what import Placed, namespace_labels, placement_spec, select
from .where import Wec, destinations, inventory, wec_names

SPS_DIR = "singleplacementslices"
OUTPUT_FORMAT = 1  # bump when generated files change shape: invalidates every reuse digest


def no_previous(path: str) -> bytes | None:
    return None


@dataclass
class Result:
    """Everything one reconcile computed; `generated` is what gets written."""

    loaded: Loaded
    config: RepoConfig
    kinds: KindTable
    wecs: dict[str, Wec]
    placements: dict[str, list[PlacementPlan]]
    mailboxes: dict[str, MailboxPlan]
    generated: Generated
    problems: list[Problem] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)  # mailbox -> input digest
    spaces: Plan | None = None  # the space step's plan (core/spaces.py)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]


def reconcile(snapshot: Snapshot, read_previous: Callable[[str], bytes | None] = no_previous,
              cache: ParseCache | None = None, progress: Progress | None = None,
              reuse: Callable[[str, str], bool] | None = None) -> Result:
    """Compute every generated file. `cache` memoizes parsing and per-object checks by content;
    `reuse(mailbox, digest)` lets the caller keep a mailbox it knows is up to date (REUSE);
    `progress` hears the loading and then the WECs computed."""
    loaded = load(snapshot, cache, progress)
    config, problems = parse_repo_config(loaded.config)
    _raise_if_errors(loaded.problems + problems)
    spaces = {s: objs for s, objs in loaded.spaces.items() if s not in config.skip_spaces}
    kinds = _kind_table(spaces, config)
    spaces, defaulted = with_default_namespaces(spaces, kinds)
    checked = defaulted + validate(spaces, kinds, cache)
    _raise_if_errors(checked)
    wecs = inventory(spaces)
    # -- space step (core/spaces.py): discovery, unknown providers
    space_out = space_step(snapshot, loaded, spaces, wecs, config.skip_spaces)
    _raise_if_errors(space_out.problems)
    warnings: list[Problem] = [p for p in loaded.problems + checked + space_out.problems if not p.is_error]
    # -- end space step
    memo = _PlanMemo(cache, loaded.digests, wecs, kinds)
    placements = {wds: _plan_placements(objs, kinds, wecs, warnings, memo.for_space(wds))
                  for wds, objs in spaces.items() if any(_is_placement(o) for o in objs)}
    builder = MailboxBuilder(kinds, _customizers(spaces), read_previous, cache)
    mailboxes: dict[str, MailboxPlan] = {}
    digests: dict[str, str] = {}
    for done, (mb, wec) in enumerate(wecs.items(), 1):
        reaching = _reaching(placements, mb)
        digests[mb] = mailbox_digest(wec, reaching, loaded.digests, kinds)
        if reuse is None or not reuse(mb, digests[mb]):
            mailboxes[mb] = builder.build(wec, reaching)
        if progress is not None:
            progress("computing", done, len(wecs))
    generated = _generated(loaded, config.skip_spaces, placements, mailboxes, wecs)
    generated = dict(sorted({**generated, **space_out.generated}.items()))  # space step: discovered Spaces
    problems = warnings + [p for plan in mailboxes.values() for p in plan.problems]
    owned = [s for s in loaded.spaces if s not in config.skip_spaces]
    generated = dict(sorted({**generated, **problem_files(owned, problems, wec_names(wecs))}.items()))
    return Result(loaded, config, kinds, wecs, placements, mailboxes, generated, sorted(problems), digests,
                  space_out.plan)


def _raise_if_errors(problems: list[Problem]) -> None:
    errors = [p for p in problems if p.is_error]
    if errors:
        raise KsgitopsError(errors)


def _kind_table(spaces: dict[str, list[Obj]], config: RepoConfig) -> KindTable:
    kinds = KindTable(config.kind_infos())
    kinds.add_crds(o for objs in spaces.values() for o in objs)
    return kinds


def _is_placement(obj: Obj) -> bool:
    return obj.kind == "EdgePlacement" and obj.group == "edge.kubestellar.io"


class _PlanMemo:
    """Where and what of each placement, memoized in the cache by what they depend on: the
    destinations by the placement's selectors and the inventory spaces' digests; the selected
    objects by the WDS's digest and the kinds (results hold identities, mapped back to objects)."""

    def __init__(self, cache: ParseCache | None, digests: dict[str, str], wecs: dict[str, Wec],
                 kinds: KindTable) -> None:
        self.cache = cache if cache is not None else {}
        self.digests = digests
        self.inventory = repr(sorted((s, digests.get(s)) for s in {w.space for w in wecs.values()}))
        self.kinds = kinds.digest()
        self.space = ""

    def for_space(self, space: str) -> "_PlanMemo":
        self.space = space
        return self

    def destinations(self, spec: dict[str, Any], wecs: dict[str, Wec]) -> tuple[Any, ...]:
        key = ("where", canonical_json(spec.get("locationSelectors") or []), self.inventory)
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = tuple(destinations(spec, wecs))
        return found  # type: ignore[no-any-return]

    def select(self, name: str, spec: dict[str, Any], workload: list[Obj], ns_labels: Any,
               kinds: KindTable) -> tuple[Any, ...]:
        key = ("what", self.space, self.digests.get(self.space), name, self.kinds)
        found = self.cache.get(key)
        if found is None:
            placed = select(spec, workload, kinds, ns_labels)
            self.cache[key] = tuple((p.obj.ref, p.clause) for p in placed)
            return tuple(placed)
        by_ref = {o.ref: o for o in workload}
        return tuple(Placed(by_ref[ref], clause) for ref, clause in found)


def _plan_placements(objs: list[Obj], kinds: KindTable, wecs: dict[str, Wec],
                     warnings: list[Problem], memo: _PlanMemo) -> list[PlacementPlan]:
    workload = [o for o in objs if not is_control(o)]
    ns_labels = namespace_labels(workload)
    plans = []
    for placement in (o for o in objs if _is_placement(o)):
        spec = placement_spec(placement)
        placed = memo.select(placement.name, spec, workload, ns_labels, kinds)
        dests = memo.destinations(spec, wecs)
        reach: dict[str, str] = {}
        for dest in dests:
            reach.setdefault(dest.mailbox, dest.location_name)
        plans.append(PlacementPlan(placement, spec, placed, dests, reach))
        warnings.extend(_placement_warnings(placement, placed, reach))
    return sorted(plans, key=lambda p: p.obj.name)


def _placement_warnings(placement: Obj, placed: tuple[Any, ...], reach: dict[str, str]) -> list[Problem]:
    name = f"EdgePlacement {placement.name}"
    found = []
    if not reach:
        found.append(Problem(placement.origin, f"{name} selects no WEC", "warning"))
    if not placed:
        found.append(Problem(placement.origin, f"{name} selects no object", "warning"))
    return found


def mailbox_digest(wec: Wec, reaching: list[PlacementPlan], space_digests: dict[str, str],
                   kinds: KindTable) -> str:
    """Everything a mailbox's content depends on (but its previous copies, which matter only
    after an error): equal digests mean equal mailboxes, so a caller may reuse the old one."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{OUTPUT_FORMAT}\0{__version__}\0{kinds.digest()}\0".encode())
    for obj in (wec.sync_target, *wec.locations):
        digest.update(canonical_json(obj.body))
    for plan in reaching:
        digest.update(f"\0{plan.obj.space}\0{plan.obj.name}\0{space_digests.get(plan.obj.space)}".encode())
    return digest.hexdigest()


def _customizers(spaces: dict[str, list[Obj]]) -> dict[str, dict[tuple[str, str], Obj]]:
    return {space: {(o.namespace, o.name): o for o in objs
                    if o.kind == "Customizer" and o.group == "edge.kubestellar.io"}
            for space, objs in spaces.items()}


def _reaching(placements: dict[str, list[PlacementPlan]], mailbox: str) -> list[PlacementPlan]:
    return [p for wds in sorted(placements) for p in placements[wds] if mailbox in p.mailboxes]


def _generated(loaded: Loaded, skipped: tuple[str, ...], placements: dict[str, list[PlacementPlan]],
               mailboxes: dict[str, MailboxPlan], wecs: dict[str, Wec]) -> Generated:
    """Every owned root; skipped spaces (RepoConfig skipSpaces) and their mailboxes are not owned:
    they stay as they are."""
    generated: Generated = {}
    for space in (s for s in loaded.spaces if s not in skipped):
        plans = placements.get(space)
        root = f"spaces/{space}/{GENERATED_DIR}/{SPS_DIR}"
        if plans:
            generated[root] = {f"{file_stem(p.obj.name)}.yaml": sps_yaml(p.obj.name, p.dests) for p in plans}
        else:
            generated[root] = None
    for mailbox, space_obj in loaded.mailboxes.items():
        if space_obj.annotations.get(INVENTORY_ANNOTATION) not in skipped:
            generated[f"spaces/{mailbox}"] = None
    emitter = Emitter()
    for mailbox in wecs:
        plan = mailboxes.get(mailbox)
        generated[f"spaces/{mailbox}"] = emitter.mailbox(plan) if plan is not None else REUSE
    return dict(sorted(generated.items()))


__all__ = ["reconcile", "Result", "no_previous"]
