"""The functional core composed: snapshot -> load -> validate -> where -> what -> customize -> emit.

Pure: the only inputs are the snapshot, the generated files as they stand (`previous`: kept
copies, a frozen space's records) and an optional parse cache; the output is data. Repo-wide
problems (ksgitops.yaml) raise KsgitopsError before anything could be written; a problem confined
to a space or a WEC freezes that part (isolation.py) and the rest is reconciled.
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Mapping

from msgspec import Struct, field

from .. import __version__
from ..kinds import KindTable, is_control
from ..model import KsgitopsError, Obj, Origin, Problem, Progress, grouped_by_wec, named_wecs
from ..names import file_stem
from .emit.files import Emitter, sps_yaml
from .load.read import INVENTORY_ANNOTATION
from .place.isolation import FROZEN_DIGEST, Frozen, Isolation, isolate
from .load.read import Loaded, ParseAhead, ParseCache, load
from .emit.mailbox import MailboxBuilder, MailboxPlan, PlacementPlan
from .emit.problems import problem_files
from .place.records import RECORDS_DIR, SPS_DIR, record_file, record_yaml
from .load.repoconfig import RepoConfig, parse_repo_config
from .load.snapshot import GENERATED_DIR, NO_PREVIOUS, Previous, Snapshot
from .place.spaces import Plan
from .place.spacestep import SPACE_DIR, space_step
from .serialize import canonical_json
from .tree import REUSE, Generated
from .load.locate import FieldLines, Located
from .load.validate import validate, with_scopes
from .place.dangling import idle_locations, unknown_collectors
from .place.what import Placed, namespace_labels, placement_spec, select
from .place.carried import WecKey, WhereMemo, wec_prints
from .place.where import Wec, inventory, wec_names
from .results import Judged

OUTPUT_FORMAT = 1  # bump when generated files change shape: invalidates every reuse digest


def no_previous(path: str) -> bytes | None:
    return None


class Result(Judged, Struct):
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
    spaces: Plan | None = None  # the space step's plan (core/place/spaces.py)
    frozen: Frozen = field(default_factory=Frozen)  # what problems confined to a space or WEC froze
    unread_whole: tuple[str, ...] = ()  # mailboxes kept whole that were neither vouched for nor read


def reconcile(snapshot: Snapshot, previous: Previous = NO_PREVIOUS,
              cache: ParseCache | None = None, progress: Progress | None = None,
              reuse: Callable[[str, str], bool] | None = None, ahead: ParseAhead | None = None,
              vouched: Callable[[str], bool] | None = None) -> Result:
    """Compute every generated file. `cache` memoizes parsing and per-object checks by content;
    `reuse(mailbox, digest)` lets the caller keep a mailbox it knows is up to date (REUSE);
    `progress` hears the loading and then the WECs computed; `ahead` may parse files first
    (`load`). `vouched(mailbox)`: the caller knows the mailbox holds what a reconcile wrote there
    without problems; a mailbox a frozen part keeps whole that it does not vouch for is read, and
    what does not read in it is named (None: no such mailbox is read)."""
    loaded = load(snapshot, cache, progress, ahead)
    config, problems = parse_repo_config(loaded.config)
    _raise_if_errors([p for p in loaded.problems + problems if not p.origin.path.startswith("spaces/")])
    spaces = {s: objs for s, objs in loaded.spaces.items() if s not in config.skip_spaces}
    kinds = _kind_table(spaces, config)
    spaces, rescoped = with_scopes(spaces, kinds)
    loaded.spaces.update(spaces)  # explain and status see the objects as placed
    lines = FieldLines(snapshot, cache)
    checked = rescoped + validate(spaces, kinds, cache, lines)
    idle: list[Obj] = []
    wecs = inventory(spaces, cache, idle)
    checked += idle_locations(idle, wecs, lines)
    # -- space step (core/place/spaces.py): discovery, unknown providers
    space_out = space_step(snapshot, loaded, spaces, wecs, config.skip_spaces)
    problems = loaded.problems + checked + space_out.problems
    # -- end space step
    isolation = isolate(spaces, loaded.mailboxes, problems, previous)
    problems += isolation.problems
    if isolation.broken:
        wecs = inventory(isolation.valid, cache)  # placements reach WECs through inventory objects without errors
        isolation.frozen.settle(wecs)
    prints = wec_prints(wecs)
    memo = _PlanMemo(cache, loaded.digests, wecs, kinds, prints, isolation.key)
    placements = {wds: _plan_placements(objs, kinds, problems, memo.for_space(wds), lines)
                  for wds, objs in spaces.items()
                  if wds not in isolation.broken and any(_is_placement(o) for o in objs)}
    problems += unknown_collectors(((p.obj, p.spec) for plans in placements.values() for p in plans), spaces, lines)
    builder = MailboxBuilder(kinds, _customizers(spaces), previous.read, cache, lines)
    mailboxes, digests = _build(wecs, prints, placements, loaded.digests, kinds, builder, isolation.frozen, reuse,
                                progress)
    unread: tuple[str, ...] = ()
    if vouched is not None:
        whole, unread = _kept_whole(isolation.frozen, loaded.mailboxes, previous, builder, vouched)
        problems += whole
    generated = _generated(loaded, config.skip_spaces, placements, mailboxes, wecs, isolation, memo)
    generated.update({root: tree for root, tree in space_out.generated.items()
                      if root.split("/")[1] not in isolation.broken})  # space step: discovered Spaces
    names = wec_names(wecs)
    names.update({mb: w.name for mb, w in isolation.frozen.wecs.items() if mb not in names})  # not in `wecs`
    problems = named_wecs(grouped_by_wec(problems + _not_mailboxes(wecs, loaded)
                                         + [p for plan in mailboxes.values() for p in plan.problems]), names)
    owned = [s for s in loaded.spaces if s not in config.skip_spaces]
    homes = {**{mb: w.space for mb, w in isolation.frozen.wecs.items()}, **{mb: w.space for mb, w in wecs.items()}}
    generated.update(problem_files(owned, problems, names, isolation.frozen, homes))
    return Result(loaded, config, kinds, wecs, placements, mailboxes, dict(sorted(generated.items())), problems,
                  digests, space_out.plan, isolation.frozen, unread)


def _build(wecs: dict[str, Wec], prints: dict[WecKey, bytes], placements: dict[str, list[PlacementPlan]],
           space_digests: dict[str, str], kinds: KindTable, builder: MailboxBuilder, frozen: Frozen,
           reuse: Callable[[str, str], bool] | None,
           progress: Progress | None) -> tuple[dict[str, MailboxPlan], dict[str, str]]:
    """The MailboxPlan of every WEC the caller does not reuse, and the input digests of those
    that do not depend on what a mailbox holds now (frozen parts do)."""
    mailboxes: dict[str, MailboxPlan] = {}
    digests: dict[str, str] = {}
    prefix = digest_prefix(kinds)
    reaching_each = _reaching(placements)
    placement_keys = {id(plan): f"\0{plan.obj.space}\0{plan.obj.name}\0{space_digests.get(plan.obj.space)}".encode()
                      for plans in placements.values() for plan in plans}
    for done, (mb, wec) in enumerate(wecs.items(), 1):
        if frozen.keeps_whole(mb):
            continue  # REUSE, whatever the caller says
        reaching = reaching_each.get(mb, [])
        kept = frozen.reaching(mb)
        digest = FROZEN_DIGEST if kept else mailbox_digest(
            prints[(wec.space, wec.name)], b"".join(placement_keys[id(plan)] for plan in reaching), prefix)
        if not kept:
            digests[mb] = digest
        if reuse is None or not reuse(mb, digest):
            mailboxes[mb] = builder.build(wec, reaching, kept)
        if progress is not None:
            progress("computing", done, len(wecs))
    return mailboxes, digests


KEPT_WHOLE_READS = 8  # mailboxes kept whole that one run reads when it cannot vouch for them


def _kept_whole(frozen: Frozen, mailboxes: Mapping[str, Obj], previous: Previous, builder: MailboxBuilder,
                vouched: Callable[[str], bool]) -> tuple[list[Problem], tuple[str, ...]]:
    """What does not read in each mailbox kept whole as it stands, as render and sync would name
    it; one the caller vouches for is not read (ksgitops wrote it: nothing in it can be broken).
    Without a record of the mailboxes (a new clone, another version's record: none is vouched for)
    a run reads at most KEPT_WHOLE_READS of them, and says how many it left unread: reading a
    fleet's mailboxes would cost more than the reconcile, when a user is fixing what froze them.
    (The problems, and the mailboxes left unread.)"""
    unvouched = [mb for mb in frozen.kept_whole() if mb in mailboxes and not vouched(mb)]
    read, unread = unvouched[:KEPT_WHOLE_READS], tuple(unvouched[KEPT_WHOLE_READS:])
    problems = [problem for mb in read
                for problem in builder.kept_whole(mb, {part: previous.read_tree(f"spaces/{mb}/{part}") or {}
                                                       for part in ("objects", "patches")}, *frozen.why_whole(mb))]
    if unread:
        these = f"this mailbox and {len(unread) - 1} more were" if len(unread) > 1 else "this mailbox was"
        problems.append(Problem(Origin(f"spaces/{unread[0]}"), (
            f"kept whole, {these} not read for files that do not read: no record says "
            f"ksgitops wrote them (a new clone, or another version's record), and a run reads at most "
            f"{KEPT_WHOLE_READS} such mailboxes: the next runs read the rest"), "warning"))
    return problems, unread


def _not_mailboxes(wecs: dict[str, Wec], loaded: Loaded) -> list[Problem]:
    """A folder named as a WEC's mailbox that reads as a source space (its space.yaml is not a
    mailbox's: hand-edited, or a space of someone's): left as it is, its own generated files
    beside it, rather than written over (which also nested the mailbox's root and the space's)."""
    return [Problem(Origin(f"spaces/{mb}"), f"the folder named as WEC {wec.name}'s mailbox is not a mailbox (its "
                    f"space.yaml does not say so): its mailbox is not written; remove or rename the folder to "
                    f"have the mailbox written again", "error", wec=mb)
            for mb, wec in wecs.items() if mb in loaded.spaces]


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
    objects by the WDS's digest and the kinds (results hold positions in the space's workload,
    which the digest and the kinds fix)."""

    def __init__(self, cache: ParseCache | None, digests: dict[str, str], wecs: dict[str, Wec],
                 kinds: KindTable, prints: dict[WecKey, bytes], left_out: str = "") -> None:
        self.cache = cache if cache is not None else {}
        self.digests = digests
        inventory = repr(sorted((s, digests.get(s)) for s in {w.space for w in wecs.values()})) + left_out
        self.where = WhereMemo(self.cache, wecs, inventory, prints)
        self.kinds_table = kinds
        self.kinds = kinds.digest()
        self.space = ""

    def for_space(self, space: str) -> "_PlanMemo":
        self.space = space
        return self

    def destinations(self, spec: dict[str, Any]) -> tuple[Any, ...]:
        return self.where.destinations(spec, canonical_json(spec.get("locationSelectors") or []))

    def select(self, name: str, spec: dict[str, Any], workload: list[Obj], ns_labels: Any,
               kinds: KindTable) -> tuple[Any, ...]:
        key = ("what", self.space, self.digests.get(self.space), name, self.kinds)
        found = self.cache.get(key)
        if found is None or found[0] != len(workload):
            placed = select(spec, workload, kinds, ns_labels)
            at = {id(o): i for i, o in enumerate(workload)}
            self.cache[key] = (len(workload), tuple((at[id(p.obj)], p.clause) for p in placed))
            return tuple(placed)
        return tuple(Placed(workload[i], clause) for i, clause in found[1])  # same digest, same objects in order

    def record(self, plan: PlacementPlan) -> bytes:
        """The placement's record (records.py): it depends on what `select` does."""
        key = ("record", plan.obj.space, self.digests.get(plan.obj.space), plan.obj.name, self.kinds)
        found = self.cache.get(key)
        if found is None:
            found = self.cache[key] = record_yaml(plan, self.kinds_table)
        return found  # type: ignore[no-any-return]


def _plan_placements(objs: list[Obj], kinds: KindTable, warnings: list[Problem], memo: _PlanMemo,
                     lines: FieldLines) -> list[PlacementPlan]:
    workload = [o for o in objs if not is_control(o)]
    ns_labels = namespace_labels(workload)
    plans = []
    for placement in (o for o in objs if _is_placement(o)):
        spec = placement_spec(placement)
        placed = memo.select(placement.name, spec, workload, ns_labels, kinds)
        dests = memo.destinations(spec)
        reach: dict[str, str] = {}
        for dest in dests:
            reach.setdefault(dest.mailbox, dest.location_name)
        plans.append(PlacementPlan(placement, spec, placed, dests, reach))
        warnings.extend(lines.placed(_placement_warnings(placement, placed, reach), placement))
    return sorted(plans, key=lambda p: p.obj.name)


def _placement_warnings(placement: Obj, placed: tuple[Any, ...], reach: dict[str, str]) -> list[Located]:
    """At the selectors that select nothing (as far as the file has them: an older KubeStellar's
    field names, read as today's, leave the line at `spec`)."""
    def warning(what: str, field: str) -> Located:
        return Located(Problem(placement.origin, f"EdgePlacement {placement.name} selects no {what}", "warning"),
                       ("spec", field))
    return ([warning("WEC", "locationSelectors")] if not reach else []) + \
        ([warning("object", "downsync")] if not placed else [])


def digest_prefix(kinds: KindTable) -> bytes:
    """What every mailbox's digest depends on: the output's shape, the code, the kinds."""
    return f"{OUTPUT_FORMAT}\0{__version__}\0{kinds.digest()}\0".encode()


def mailbox_digest(wec_print: bytes, reaching: bytes, prefix: bytes) -> str:
    """Everything a mailbox's content depends on (but its previous copies, which matter only
    after an error), after `digest_prefix`: the WEC's inventory objects (`wec_prints`) and the
    placements reaching it, each named with its space's digest. Equal digests mean equal
    mailboxes, so a caller may reuse the old one. Each object's parameter Location follows from
    these too: its placements' locationSelectors (in their space's digest) against the WEC's
    Locations (in its print)."""
    return hashlib.blake2b(prefix + wec_print + reaching, digest_size=20).hexdigest()


def _customizers(spaces: dict[str, list[Obj]]) -> dict[str, dict[tuple[str, str], Obj]]:
    return {space: {(o.namespace, o.name): o for o in objs
                    if o.kind == "Customizer" and o.group == "edge.kubestellar.io"}
            for space, objs in spaces.items()}


def _reaching(placements: dict[str, list[PlacementPlan]]) -> dict[str, list[PlacementPlan]]:
    """The placements reaching each mailbox, in order (by space, then as planned)."""
    found: dict[str, list[PlacementPlan]] = {}
    for wds in sorted(placements):
        for plan in placements[wds]:
            for mailbox in plan.mailboxes:
                found.setdefault(mailbox, []).append(plan)
    return found


def _generated(loaded: Loaded, skipped: tuple[str, ...], placements: dict[str, list[PlacementPlan]],
               mailboxes: dict[str, MailboxPlan], wecs: dict[str, Wec], isolation: Isolation,
               memo: _PlanMemo) -> Generated:
    """Every owned root; skipped spaces (RepoConfig skipSpaces) and their mailboxes are not owned:
    they stay as they are; so do the generated roots of broken spaces and the mailboxes frozen WECs
    and frozen placements keep whole."""
    generated: Generated = {}
    for space in (s for s in loaded.spaces if s not in skipped):
        plans = placements.get(space)
        sps, records = f"spaces/{space}/{GENERATED_DIR}/{SPS_DIR}", f"spaces/{space}/{GENERATED_DIR}/{RECORDS_DIR}"
        if space in isolation.broken:
            generated[sps] = generated[records] = generated[f"spaces/{space}/{GENERATED_DIR}/{SPACE_DIR}"] = REUSE
        elif plans:
            generated[sps] = {f"{file_stem(p.obj.name)}.yaml": sps_yaml(p.obj.name, p.dests) for p in plans}
            generated[records] = {record_file(p.obj.name): memo.record(p) for p in plans}
        else:
            generated[sps] = generated[records] = None
    for mailbox, space_obj in loaded.mailboxes.items():
        if space_obj.annotations.get(INVENTORY_ANNOTATION) not in skipped:
            generated[f"spaces/{mailbox}"] = REUSE if mailbox in isolation.frozen.wecs else None
    emitter = Emitter()
    for mailbox in wecs:
        plan = mailboxes.get(mailbox) if mailbox not in loaded.spaces else None  # not ours (_not_mailboxes)
        generated[f"spaces/{mailbox}"] = emitter.mailbox(plan) if plan is not None else REUSE
    for mailbox in isolation.frozen.wecs:
        if mailbox not in loaded.spaces:  # a mailbox name that collides with a source space is not ours
            generated[f"spaces/{mailbox}"] = REUSE
    return generated


__all__ = ["reconcile", "Result", "no_previous", "SPS_DIR"]
