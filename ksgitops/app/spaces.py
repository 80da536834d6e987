"""`ksgitops spaces`: the space manager over a repository work tree (docs/SPACES.md, "The spaces
command").

Composes the edges (the work tree, the space providers of `io/spaces/`) with the pure
state machine (`core/place/spaces.py: plan`):

1. load the source spaces (any unreadable file is fatal: it might hold a Space object, and a
   missed object could get its managed space deleted); validate the Space and SpaceProviderDesc
   objects (schemas, scope, names);
2. build the providers: the default `git` provider over `REPO/spaces/`, one per SpaceProviderDesc
   (git: its Config work tree, default this one; kubeconfig: `--kubeconfig PROVIDER=FILE`, else its
   Config, else a plain `--kubeconfig FILE`); relative paths are relative to REPO;
3. observe every provider (an unreachable one is a warning: its spaces become NotReady, nothing is
   created or deleted on its account), plan over the Space objects of a `RepoSpaceStore` (source
   objects, mailbox spaces owned by their SyncTargets, the objects ksgitops wrote for discovered
   spaces);
4. with `apply`: carry out the plan through `SpaceManager` — except the creation and deletion of
   mailbox spaces, which is `ksgitops reconcile`'s — then prune stale generated files.

Nothing is applied when there is an error (exit 2); a failed action exits 3.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from msgspec import Struct, field

from ..core.load.read import load
from ..core.load.repoconfig import parse_repo_config
from ..core.place.spaces import CREATE_SPACE, DEFAULT_PROVIDER, DELETE_OBJECT, DELETE_SPACE, SET_PHASE, WRITE_OBJECT, Action, Observed, Plan, ProviderDesc, SpaceObj, is_provider_desc, is_space, plan, provider_from, simulate, space_from
from ..core.load.locate import FieldLines
from ..core.load.validate import validate, with_scopes
from ..names import mailbox_name
from ..io.fs.tree import WorkTreeSnapshot
from ..io.spaces import Applied, GitFolderProvider, KubeconfigProvider, Provider, ProviderError, RepoSpaceStore, SourceSpace, SpaceManager
from ..kinds import KindTable
from ..model import KsgitopsError, Obj, Origin, Problem, counted

SPACE_GROUP = "space.kubestellar.io"
MAILBOX_NOTE = "mailbox: `ksgitops reconcile` creates and deletes it with its SyncTarget"


class SpaceRow(Struct, frozen=True):
    """One space as the command shows it. `type` is "" for a space without a Space object;
    `observed` is the provider's phase, "missing" or "unreachable"."""

    name: str
    provider: str
    type: str
    phase: str
    owner: str
    object: str
    observed: str

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "provider": self.provider, "type": self.type or None,
                "phase": self.phase or None, "owner": self.owner or None, "object": self.object or None,
                "observed": self.observed}


class SpacesOutcome(Struct):
    rows: list[SpaceRow]
    plan: Plan
    problems: list[Problem]
    left: list[tuple[Action, str]] = field(default_factory=list)  # planned, not this command's to do
    stale: list[str] = field(default_factory=list)  # generated files to prune (removed, with apply)
    applied: Applied | None = None

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    @property
    def exit_code(self) -> int:
        if self.errors:
            return 2
        return 3 if self.applied is not None and not self.applied.ok else 0

    def as_json(self) -> dict[str, Any]:
        left = {a: why for a, why in self.left}
        data: dict[str, Any] = {
            "spaces": [r.as_json() for r in self.rows],
            "actions": [{**_action_json(a), **({"left": left[a]} if a in left else {})} for a in self.plan.actions],
            "problems": [_problem_json(p) for p in self.problems],
            "applied": None,
        }
        if self.applied is None:
            data["stale"] = self.stale
        else:
            data["applied"] = {"done": [_action_json(a) for a in self.applied.done],
                               "failed": [{**_action_json(a), "error": e} for a, e in self.applied.failed],
                               "skipped": [_action_json(a) for a in self.applied.skipped],
                               "left": [{**_action_json(a), "reason": why} for a, why in self.left],
                               "removed": self.stale}
        return data

    def as_text(self) -> str:
        if not self.rows and self.errors:
            return ""  # the sources could not be read: the problems say why
        lines = _table(self.rows)
        lines.append("")
        left = {a: why for a, why in self.left}
        if self.applied is None:
            if not self.plan.actions and not self.stale:
                lines.append("nothing to do")
            else:
                if self.plan.actions:
                    lines.append(f"{counted(len(self.plan.actions), 'action')} planned:")
                    lines += [f"  {a}" + (f"  [left: {left[a]}]" if a in left else "") for a in self.plan.actions]
                if self.stale:
                    lines.append(f"{counted(len(self.stale), 'stale generated file')} to remove:")
                    lines += [f"  {path}" for path in self.stale]
                if self.errors:
                    lines.append("not applicable: fix the errors first")
                elif len(self.left) < len(self.plan.actions) or self.stale:
                    lines.append("run with --apply to carry them out")
        else:
            a = self.applied
            lines += [f"done: {x}" for x in a.done]
            lines += [f"failed: {x}: {e}" for x, e in a.failed]
            lines += [f"skipped: {x} (an earlier action for {x.space} failed)" for x in a.skipped]
            lines += [f"left: {x} ({why})" for x, why in self.left]
            lines += [f"removed: {path}" for path in self.stale]
            lines.append(f"applied: {len(a.done)} done, {len(a.failed)} failed, {len(a.skipped)} skipped, "
                         f"{len(self.left)} left, {counted(len(self.stale), 'stale file')} removed")
        return "\n".join(lines) + "\n"


def _action_json(a: Action) -> dict[str, Any]:
    return {"op": a.op, "space": a.space, "provider": a.provider, **({"phase": a.phase} if a.phase else {})}


def _problem_json(p: Problem) -> dict[str, Any]:
    return {"file": p.origin.path, "line": p.origin.line, "message": p.message, "severity": p.severity}


def _table(rows: Sequence[SpaceRow]) -> list[str]:
    header = ("SPACE", "PROVIDER", "TYPE", "PHASE", "OBSERVED", "OWNER", "OBJECT")
    cells = [header] + [(r.name, r.provider, r.type or "-", r.phase or "-", r.observed, r.owner or "-",
                         r.object or "-") for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    return ["  ".join(c.ljust(w) for c, w in zip(cells_row, widths)).rstrip() for cells_row in cells]


# ---- the use case

class _Inputs(Struct):
    sources: list[SourceSpace] = field(default_factory=list)
    descs: list[tuple[str, ProviderDesc]] = field(default_factory=list)  # (holder space, desc)
    mailboxes: dict[str, SpaceObj] = field(default_factory=dict)  # owned by SyncTargets
    generated_mailboxes: set[str] = field(default_factory=set)  # mailbox folders there now
    problems: list[Problem] = field(default_factory=list)


def _inputs(root: Path) -> _Inputs:
    snapshot = WorkTreeSnapshot(root)
    loaded = load(snapshot)
    config, config_problems = parse_repo_config(loaded.config)
    errors = [p for p in loaded.problems + config_problems if p.is_error]
    if errors:  # an unreadable file might hold a Space object: never plan without it
        raise KsgitopsError(errors)
    found = _Inputs(generated_mailboxes=set(loaded.mailboxes))
    ours: dict[str, list[Obj]] = {}
    for space, objs in loaded.spaces.items():
        if space in config.skip_spaces:
            continue
        for obj in objs:
            if obj.group == SPACE_GROUP:
                ours.setdefault(space, []).append(obj)
            if is_space(obj):
                found.sources.append(SourceSpace(space, space_from(obj), obj.namespace))
            elif is_provider_desc(obj):
                found.descs.append((space, provider_from(obj)))
            elif obj.kind == "SyncTarget" and obj.group == "edge.kubestellar.io":
                mailbox = mailbox_name(space, obj.name)
                existing = loaded.mailboxes.get(mailbox)
                found.mailboxes[mailbox] = SpaceObj(mailbox, "managed", DEFAULT_PROVIDER.name, "Ready",
                                                    f"SyncTarget {space}/{obj.name}",
                                                    origin=existing.origin if existing is not None else obj.origin)
    kinds = KindTable(config.kind_infos())
    ours, rescoped = with_scopes(ours, kinds)
    found.problems = rescoped + validate(ours, kinds, lines=FieldLines(snapshot))
    return found


def _kubeconfig_args(values: Sequence[str], known: set[str]) -> tuple[Path | None, dict[str, Path], list[Problem]]:
    """`--kubeconfig FILE` (the default for kubeconfig providers without Config) and
    `--kubeconfig PROVIDER=FILE` (that provider's file, whatever its Config says)."""
    plain: list[Path] = []
    named: dict[str, Path] = {}
    problems = []
    for value in values:
        name, sep, path = value.partition("=")
        if sep and name in known and not Path(value).exists():
            named[name] = Path(path).expanduser()
        elif sep and name and not Path(value).exists() and "/" not in name:
            problems.append(Problem(Origin("--kubeconfig"), f"{value}: no kubeconfig SpaceProviderDesc named {name}"))
        else:
            plain.append(Path(value).expanduser())
    if len(plain) > 1:
        problems.append(Problem(Origin("--kubeconfig"), "give one default kubeconfig file, or PROVIDER=FILE per "
                                "kubeconfig provider"))
    return (plain[0] if plain else None), named, problems


def _resolve(root: Path, path: str) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() else root / p


def _same_dir(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def _providers(root: Path, descs: Sequence[tuple[str, ProviderDesc]], kubeconfigs: Sequence[str],
               probe_timeout: float) -> tuple[list[Provider], dict[str, str | None], list[Problem]]:
    """The providers to observe, where each one's discovered Space objects are written (None: in
    the space's own folder of this repository), and problems."""
    kube_names = {d.name for _, d in descs if d.type == "kubeconfig"}
    default_file, named, problems = _kubeconfig_args(kubeconfigs, kube_names)
    providers: list[Provider] = []
    homes: dict[str, str | None] = {}
    used_default = False
    for holder, desc in sorted(descs, key=lambda hd: (hd[1].name, hd[1].origin)):
        if desc.name in homes or desc.name in {p.name for p in providers}:
            continue  # defined twice: the plan reports it
        if desc.type == "git":
            path = _resolve(root, desc.config) if desc.config else root
            providers.append(GitFolderProvider(path, desc.name, desc.prefix))
            homes[desc.name] = None if _same_dir(path, root) else holder
        elif desc.type == "kubeconfig":
            file = named.get(desc.name) or (_resolve(root, desc.config) if desc.config else default_file)
            used_default = used_default or (desc.name not in named and not desc.config and default_file is not None)
            if file is None:
                problems.append(Problem(desc.origin, f"SpaceProviderDesc {desc.name}: a kubeconfig provider needs "
                                        "spec.Config (the kubeconfig file) or --kubeconfig"))
                continue
            providers.append(KubeconfigProvider(file, desc.name, desc.prefix, probe_timeout=probe_timeout))
            homes[desc.name] = holder
    if DEFAULT_PROVIDER.name not in homes:
        providers.append(GitFolderProvider(root, DEFAULT_PROVIDER.name))
        homes[DEFAULT_PROVIDER.name] = None
    if default_file is not None and not used_default:
        problems.append(Problem(Origin("--kubeconfig"), f"{default_file}: unused (no kubeconfig SpaceProviderDesc "
                                "without spec.Config)", "warning"))
    return providers, homes, problems


def _observe(providers: Sequence[Provider], origins: Mapping[str, Origin],
             problems: list[Problem]) -> dict[str, list[Observed] | None]:
    observed: dict[str, list[Observed] | None] = {}
    for provider in providers:
        try:
            observed[provider.name] = provider.list()
        except (ProviderError, OSError) as e:
            observed[provider.name] = None
            reason = "; ".join(p.message for p in e.problems) if isinstance(e, KsgitopsError) else str(e)
            problems.append(Problem(origins.get(provider.name, Origin(f"provider {provider.name}")),
                                    f"provider {provider.name} is unreachable (its spaces are NotReady, nothing "
                                    f"is created or deleted): {reason}", "warning"))
    return observed


def _rows(objects: Sequence[SpaceObj], observed: Mapping[str, Sequence[Observed] | None],
          locations: Mapping[str, str]) -> list[SpaceRow]:
    listings = {name: None if spaces is None else {o.name: o for o in spaces} for name, spaces in observed.items()}
    rows: dict[tuple[str, str], SpaceRow] = {}
    for obj in objects:
        listing = listings.get(obj.provider)
        here = None if listing is None else listing.get(obj.name)
        state = "unreachable" if listing is None else (here.phase if here is not None else "missing")
        rows.setdefault((obj.name, obj.provider), SpaceRow(obj.name, obj.provider, obj.type, obj.phase, obj.owner,
                                                           locations.get(obj.name, ""), state))
    named = {o.name for o in objects}
    for provider, listing in listings.items():
        for name, space in (listing or {}).items():
            if name not in named:
                rows[(name, provider)] = SpaceRow(name, provider, "", "", "", "", space.phase)
    return [rows[k] for k in sorted(rows)]


def spaces(repo: Path, kubeconfigs: Sequence[str] = (), apply: bool = False,
           probe_timeout: float = 2.0) -> SpacesOutcome:
    """Observe, plan and (with `apply`) carry out the plan on the work tree at `repo`."""
    root = Path(repo)
    if not root.is_dir():
        raise KsgitopsError(f"{repo}: no such directory")
    try:
        found = _inputs(root)
    except KsgitopsError as e:  # unreadable sources: reported like invalid objects (exit 2)
        return SpacesOutcome([], Plan(), e.problems)
    problems = list(found.problems)
    providers, homes, provider_problems = _providers(root, found.descs, kubeconfigs, probe_timeout)
    problems += provider_problems
    descs = [d for _, d in found.descs]
    store = RepoSpaceStore(root, found.sources, list(found.mailboxes.values()), homes)
    objects = store.list()
    observed = _observe(providers, {d.name: d.origin for d in descs}, problems)
    p = plan(objects, descs, observed)
    problems += p.problems
    left = _left_alone(p, found, objects)
    outcome = SpacesOutcome([], p, sorted(set(problems)), left, store.stale())
    if not apply or outcome.errors:
        outcome.rows = _rows(objects, observed, store.locations())
        return outcome
    skip = {a for a, _ in left}
    manager = SpaceManager(providers, store, descs)
    applied = manager.apply(Plan(tuple(a for a in p.actions if a not in skip), p.problems))
    _, after = simulate(Plan(tuple(applied.done)), objects, observed)
    created = {a.space: a.provider for a in applied.done if a.op == CREATE_SPACE}
    if created:  # look at the new spaces again: a git folder is Ready at once (a second run would say so)
        after.update(_observe([pr for pr in providers if pr.name in set(created.values())], {}, []))
        again = plan(store.list(), descs, after)
        settle = manager.apply(Plan(tuple(a for a in again.actions if a.op == SET_PHASE and a.space in created)))
        applied.done += settle.done
        applied.failed += settle.failed
    outcome.applied = applied
    outcome.stale = store.prune()
    outcome.rows = _rows(store.list(), after, store.locations())
    return outcome


def _left_alone(p: Plan, found: Any, objects: list[SpaceObj]) -> list[tuple[Action, str]]:
    """The planned actions `spaces --apply` does not carry out, each with the reason."""
    mailboxes = set(found.mailboxes) | found.generated_mailboxes
    live = {o.name for o in objects if not o.deleting}
    sources = {s.obj.name: s.obj.origin for s in found.sources}
    left: list[tuple[Action, str]] = []
    for a in p.actions:
        if a.space in mailboxes and a.op in (CREATE_SPACE, DELETE_SPACE, SET_PHASE):
            left.append((a, MAILBOX_NOTE))
        elif a.op == DELETE_SPACE and a.space in live:  # never, by the plan's guarantee; checked all the same
            left.append((a, "its Space object exists"))
        elif a.op in (DELETE_OBJECT, WRITE_OBJECT) and a.space in sources:  # deletionTimestamp on a source object
            left.append((a, f"the Space object is defined at {sources[a.space]}: remove it there (ksgitops never "
                            "edits source files)"))
    return left


__all__ = ["spaces", "SpacesOutcome", "SpaceRow", "MAILBOX_NOTE"]
