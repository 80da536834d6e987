"""The space manager's state machine (core/place/spaces.py): every transition as a table row, plus
properties over random worlds (idempotence, determinism, never orphaned, never deleted while the
object exists, unreachable providers change nothing but phases)."""
from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksgitops.core.place.spaces import (CAN_CREATE, CREATE_SPACE, DELETE_OBJECT, DELETE_SPACE, SET_PHASE, WRITE_OBJECT, Observed, Plan, ProviderDesc, SpaceObj, inputs_from, plan, simulate, space_body, space_from)
from ksgitops.model import Obj, Origin

GIT = ProviderDesc("git", "git")
DISCOVER = ProviderDesc("git", "git", prefix="wec-")
KUBE = ProviderDesc("clusters", "kubeconfig", prefix="wec-", config="/k")
M = Observed  # shorthand


def obj(name: str, type: str = "managed", provider: str = "git", phase: str = "", deleting: bool = False,
        line: int = 1) -> SpaceObj:
    return SpaceObj(name, type, provider, phase, deleting=deleting, origin=Origin("spaces/ctl/spaces.yaml", line))


def acts(p: Plan) -> list[str]:
    return [str(a) for a in p.actions]


# (id, objects, providers, observed, expected actions, expected problem fragments)
TABLE: list[tuple[str, list[SpaceObj], list[ProviderDesc], dict[str, Any], list[str], list[str]]] = [
    # ---- managed
    ("managed-created", [obj("a")], [], {"git": []},
     ["CreateSpace a (git)", "SetPhase a (git) -> Initializing"], []),
    ("managed-initializing-stays", [obj("a", phase="Initializing")], [], {"git": [M("a", "Initializing", True)]},
     [], []),
    ("managed-becomes-ready", [obj("a", phase="Initializing")], [], {"git": [M("a", "Ready", True)]},
     ["SetPhase a (git) -> Ready"], []),
    ("managed-ready-stays", [obj("a", phase="Ready")], [], {"git": [M("a", "Ready", True)]}, [], []),
    ("managed-becomes-notready", [obj("a", phase="Ready")], [], {"git": [M("a", "NotReady", True)]},
     ["SetPhase a (git) -> NotReady"], []),
    ("managed-without-phase-observed", [obj("a")], [], {"git": [M("a")]}, ["SetPhase a (git) -> Ready"], []),
    ("managed-provider-unreachable", [obj("a", phase="Ready")], [], {"git": None},
     ["SetPhase a (git) -> NotReady"], []),
    ("managed-provider-absent-is-unreachable", [obj("a", phase="NotReady")], [], {}, [], []),
    ("managed-deleting-observed", [obj("a", deleting=True)], [], {"git": [M("a", "Ready", True)]},
     ["DeleteSpace a (git)", "DeleteSpaceObject a (git)"], []),
    ("managed-deleting-gone", [obj("a", deleting=True)], [], {"git": []}, ["DeleteSpaceObject a (git)"], []),
    ("managed-deleting-unreachable-finalizer-holds", [obj("a", "managed", phase="Ready", deleting=True)], [],
     {"git": None}, ["SetPhase a (git) -> NotReady"], []),
    ("managed-object-gone-space-deleted", [], [], {"git": [M("a", "Ready", True)]}, ["DeleteSpace a (git)"], []),
    ("managed-object-gone-unreachable", [], [], {"git": None}, [], []),
    ("managed-on-kubeconfig-is-an-error", [obj("wec-a", provider="clusters")], [KUBE],
     {"clusters": [M("wec-a")]}, ["SetPhase wec-a (clusters) -> Ready"], ["cannot create or delete spaces"]),
    ("managed-on-kubeconfig-missing", [obj("wec-a", provider="clusters")], [KUBE], {"clusters": []},
     ["SetPhase wec-a (clusters) -> NotReady"], ["cannot create or delete spaces"]),
    ("marked-kubeconfig-space-never-deleted", [], [KUBE], {"clusters": [M("x", "Ready", True)]}, [], []),
    ("object-elsewhere-protects-marked-space", [obj("a", "imported", "clusters", "Ready")],
     [ProviderDesc("clusters", "kubeconfig")], {"git": [M("a", "Ready", True)], "clusters": [M("a")]}, [], []),
    # ---- unmanaged (discovery)
    ("discovered", [], [DISCOVER], {"git": [M("wec-a")]}, ["WriteSpaceObject wec-a (git)"], []),
    ("discovered-notready", [], [DISCOVER], {"git": [M("wec-a", "NotReady")]},
     ["WriteSpaceObject wec-a (git)"], []),
    ("discovered-kubeconfig", [], [KUBE], {"clusters": [M("wec-a"), M("other")]},
     ["WriteSpaceObject wec-a (clusters)"], []),
    ("prefix-mismatch-ignored", [], [DISCOVER], {"git": [M("wds1")]}, [], []),
    ("no-prefix-no-discovery", [], [GIT], {"git": [M("wec-a")]}, [], []),
    ("discovery-needs-a-valid-name", [], [ProviderDesc("git", "git", prefix="W")], {"git": [M("W_x")]}, [], []),
    ("unmanaged-disappeared", [obj("wec-a", "unmanaged", phase="Ready")], [DISCOVER], {"git": []},
     ["DeleteSpaceObject wec-a (git)"], []),
    ("unmanaged-ready", [obj("wec-a", "unmanaged", phase="Ready")], [DISCOVER], {"git": [M("wec-a")]}, [], []),
    ("unmanaged-phase-follows", [obj("wec-a", "unmanaged", phase="Ready")], [DISCOVER],
     {"git": [M("wec-a", "NotReady")]}, ["SetPhase wec-a (git) -> NotReady"], []),
    ("unmanaged-unreachable-kept", [obj("wec-a", "unmanaged", phase="Ready")], [DISCOVER], {"git": None},
     ["SetPhase wec-a (git) -> NotReady"], []),
    ("unmanaged-deleting-rediscovered", [obj("wec-a", "unmanaged", phase="Ready", deleting=True)], [DISCOVER],
     {"git": [M("wec-a")]}, ["DeleteSpaceObject wec-a (git)", "WriteSpaceObject wec-a (git)"], []),
    ("unmanaged-deleting-not-discoverable", [obj("x", "unmanaged", phase="Ready", deleting=True)], [DISCOVER],
     {"git": [M("x")]}, ["DeleteSpaceObject x (git)"], []),
    ("unmanaged-never-deletes-the-space", [obj("wec-a", "unmanaged", deleting=True)], [GIT],
     {"git": [M("wec-a")]}, ["DeleteSpaceObject wec-a (git)"], []),
    # ---- imported
    ("imported-missing", [obj("a", "imported")], [], {"git": []}, ["SetPhase a (git) -> NotReady"], []),
    ("imported-ready", [obj("a", "imported", phase="NotReady")], [], {"git": [M("a")]},
     ["SetPhase a (git) -> Ready"], []),
    ("imported-marked-kept", [obj("a", "imported", phase="Ready")], [], {"git": [M("a", "Ready", True)]}, [], []),
    ("imported-deleting-space-kept", [obj("a", "imported", deleting=True)], [], {"git": [M("a")]},
     ["DeleteSpaceObject a (git)"], []),
    ("imported-deleting-marked-not-orphaned", [obj("a", "imported", deleting=True)], [],
     {"git": [M("a", "Ready", True)]}, ["DeleteSpace a (git)", "DeleteSpaceObject a (git)"], []),
    # ---- problems
    ("unknown-provider", [obj("a", provider="nope")], [], {"git": [M("a", "Ready", True)]}, [],
     ["Space a: unknown SpaceProviderDesc 'nope' (known: git)"]),
    ("unknown-type", [obj("a", "borrowed")], [], {"git": []}, [], ["unknown Type 'borrowed'"]),
    ("invalid-name", [obj("A_b")], [], {"git": []}, [], ["Space name 'A_b' is not a DNS-1123 label"]),
    ("duplicate-space", [obj("a", phase="Ready", line=1), obj("a", "imported", line=9)], [],
     {"git": [M("a")]}, [], ["spaces/ctl/spaces.yaml:9: Space a is defined twice: here and at spaces/ctl/spaces.yaml:1"]),
    ("duplicate-provider", [], [ProviderDesc("p", "git", origin=Origin("x", 1)), ProviderDesc("p", "git", origin=Origin("x", 5))],
     {"git": []}, [], ["x:5: SpaceProviderDesc p is defined twice"]),
    # KubeStellar's ProviderTypes (kcp, kind, kubeflex) are valid input: reported where a Space uses them
    # (space-framework v0.14.2 pkg/apis/space/v1alpha1/space-provider-desc.go: KcpProviderType etc.)
    ("undriven-provider-type-unused", [], [ProviderDesc("p", "kcp")], {}, [], []),
    ("undriven-provider-type-used", [obj("a", provider="p")], [ProviderDesc("p", "kind")], {}, [],
     ["warning: Space a: its SpaceProviderDesc p has ProviderType 'kind', which ksgitops does not drive (it drives "
      "git, kubeconfig): the Space is left alone"]),
    ("discovered-twice", [], [ProviderDesc("a", "git", "wec-"), ProviderDesc("b", "kubeconfig", "wec-")],
     {"a": [M("wec-x")], "b": [M("wec-x")]}, ["WriteSpaceObject wec-x (a)"],
     ["warning: space wec-x is discovered by providers a and b; a has it"]),
]


@pytest.mark.parametrize("objects, providers, observed, expected, problems",
                         [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_transition(objects: list[SpaceObj], providers: list[ProviderDesc], observed: dict[str, Any],
                    expected: list[str], problems: list[str]) -> None:
    p = plan(objects, providers, observed)
    assert acts(p) == expected
    text = "\n".join(str(x) for x in p.problems)
    for fragment in problems:
        assert fragment in text
    if not problems:
        assert not p.problems
    # applying the plan and planning again: nothing left to do
    objs2, observed2 = simulate(p, objects, observed)
    assert acts(plan(objs2, providers, observed2)) == []


def test_table_covers_every_action() -> None:
    ops = {str(a).split()[0] for row in TABLE for a in row[4]}
    assert ops == {CREATE_SPACE, DELETE_SPACE, DELETE_OBJECT, WRITE_OBJECT, SET_PHASE}


def test_discovered_object_carries_the_observed_phase() -> None:
    p = plan([], [DISCOVER], {"git": [M("wec-a", "NotReady")]})
    assert p.of(WRITE_OBJECT)[0].space_obj() == SpaceObj("wec-a", "unmanaged", "git", "NotReady")


def test_git_provider_desc_replaces_the_default() -> None:
    assert acts(plan([], [], {"git": [M("wec-a")]})) == []
    assert acts(plan([], [DISCOVER], {"git": [M("wec-a")]})) == ["WriteSpaceObject wec-a (git)"]


def test_lifecycle_of_a_managed_space() -> None:
    """object written -> created (Initializing) -> Ready -> object deleted -> space deleted."""
    providers = [GIT]
    world: dict[str, Any] = {"git": []}
    objects = [obj("a")]
    p = plan(objects, providers, world)
    assert acts(p) == ["CreateSpace a (git)", "SetPhase a (git) -> Initializing"]
    objects, world = simulate(p, objects, world)
    assert world["git"] == [M("a", "Initializing", True)] and objects[0].phase == "Initializing"
    world = {"git": [M("a", "Ready", True)]}  # the provider finished
    p = plan(objects, providers, world)
    assert acts(p) == ["SetPhase a (git) -> Ready"]
    objects, world = simulate(p, objects, world)
    p = plan([], providers, world)  # the object is removed from the repo
    assert acts(p) == ["DeleteSpace a (git)"]
    objects, world = simulate(p, [], world)
    assert world == {"git": []} and not plan(objects, providers, world)


# ---- properties over random worlds

NAMES = ["a", "b", "wec-a", "wec-b", "x-1"]
PROVIDERS = [ProviderDesc("git", "git", "wec-"), ProviderDesc("other", "git", "x-"),
             ProviderDesc("clusters", "kubeconfig", "wec-")]
PNAMES = ["git", "other", "clusters", "ghost"]


@st.composite
def worlds(draw: Any) -> tuple[list[SpaceObj], list[ProviderDesc], dict[str, Any]]:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=5))
    objects = [SpaceObj(n, draw(st.sampled_from(["managed", "unmanaged", "imported"])),
                        draw(st.sampled_from(PNAMES)), draw(st.sampled_from(["", "Initializing", "Ready", "NotReady"])),
                        deleting=draw(st.booleans())) for n in names]
    providers = draw(st.lists(st.sampled_from(PROVIDERS), unique=True))
    observed: dict[str, Any] = {}
    for pname in ["git", "other", "clusters"]:
        choice = draw(st.sampled_from(["absent", "none", "list"]))
        if choice == "none":
            observed[pname] = None
        elif choice == "list":
            observed[pname] = [M(n, draw(st.sampled_from(["Initializing", "Ready", "NotReady"])), draw(st.booleans()))
                               for n in draw(st.lists(st.sampled_from(NAMES), unique=True))]
    return objects, providers, observed


@settings(max_examples=400, deadline=None)
@given(worlds(), st.randoms())
def test_properties(world: tuple[list[SpaceObj], list[ProviderDesc], dict[str, Any]], rnd: random.Random) -> None:
    objects, providers, observed = world
    p = plan(objects, providers, observed)
    # determinism: the order of every input is irrelevant
    shuffled = {k: None if v is None else rnd.sample(v, len(v)) for k, v in observed.items()}
    assert plan(rnd.sample(objects, len(objects)), rnd.sample(providers, len(providers)), shuffled) == p
    # idempotence: the world after the plan needs nothing more
    objs2, observed2 = simulate(p, objects, observed)
    assert not plan(objs2, providers, observed2)
    descs = {d.name: d for d in providers} | ({"git": GIT} if "git" not in {d.name for d in providers} else {})
    released = {a.space for a in p.actions if a.op == DELETE_OBJECT}
    live = {o.name for o in objects if not o.deleting} - released
    for a in p.actions:
        # an unreachable provider changes nothing but phases (and releases objects we never own)
        if observed.get(a.provider) is None:
            assert a.op in (SET_PHASE, DELETE_OBJECT)
        # only providers that can create do create or delete; never while the object exists
        if a.op in (CREATE_SPACE, DELETE_SPACE):
            assert descs[a.provider].type in CAN_CREATE
        if a.op == DELETE_SPACE:  # the object, if any, is released in this plan, after the space
            assert a.space not in live
            later = p.actions[p.actions.index(a):]
            assert not any(b.op == DELETE_OBJECT and b.space == a.space for b in p.actions[:p.actions.index(a)])
            assert all(b.space != a.space or b.op != CREATE_SPACE for b in later)
        if a.op == CREATE_SPACE:
            assert any(o.name == a.space and o.type == "managed" for o in objects)
    # never orphaned: after the plan, every marked space of a creating provider has an object
    kept = {o.name for o in objs2}
    for pname, listing in observed2.items():
        if listing is None or pname not in descs or descs[pname].type not in CAN_CREATE:
            continue
        for space in listing:
            assert not space.managed or space.name in kept


# ---- Space objects <-> plain data

def test_space_from_an_object() -> None:
    body = {"apiVersion": "space.kubestellar.io/v1alpha1", "kind": "Space",
            "metadata": {"name": "wec-a", "namespace": "spaceprovider-clusters", "deletionTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"Type": "unmanaged", "SpaceProviderDescName": "clusters"}, "status": {"Phase": "Ready"}}
    got = space_from(Obj("ctl", body, Origin("spaces/ctl/s.yaml", 3)))
    assert got == SpaceObj("wec-a", "unmanaged", "clusters", "Ready", "", True, Origin("spaces/ctl/s.yaml", 3))
    minimal = space_from(Obj("ctl", {"apiVersion": "space.kubestellar.io/v1alpha1", "kind": "Space",
                                     "metadata": {"name": "b"}}, Origin("f")))
    assert (minimal.type, minimal.provider, minimal.phase, minimal.deleting) == ("managed", "git", "", False)


def test_inputs_and_body() -> None:
    api = "space.kubestellar.io/v1alpha1"
    spaces = {"ctl": [Obj("ctl", {"apiVersion": api, "kind": "SpaceProviderDesc", "metadata": {"name": "clusters"},
                                  "spec": {"ProviderType": "kubeconfig", "SpacePrefixForDiscovery": "wec-",
                                           "Config": "/etc/kc"}}, Origin("p")),
                      Obj("ctl", {"apiVersion": api, "kind": "Space", "metadata": {"name": "s"}}, Origin("s")),
                      Obj("ctl", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, Origin("c"))]}
    found = inputs_from(spaces)
    assert found.providers == [ProviderDesc("clusters", "kubeconfig", "wec-", "/etc/kc", Origin("p"))]
    assert [o.name for o in found.objects] == ["s"]
    assert space_body(SpaceObj("wec-a", "unmanaged", "clusters", "Ready")) == {
        "apiVersion": api, "kind": "Space", "metadata": {"name": "wec-a"},
        "spec": {"SpaceProviderDescName": "clusters", "Type": "unmanaged"}, "status": {"Phase": "Ready"}}


# ---- the space step inside reconcile (pipeline integration)

from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

from conftest import copy_example_sources  # noqa: E402
from ksgitops.core.pipeline import reconcile  # noqa: E402
from ksgitops.io.fs.tree import WorkTreeSnapshot  # noqa: E402
from ksgitops.io.fs.worktree import write_generated  # noqa: E402

DESC = """apiVersion: space.kubestellar.io/v1alpha1
kind: SpaceProviderDesc
metadata: {name: git}
spec: {ProviderType: git, SpacePrefixForDiscovery: wec-}
"""
CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: default}\n"


def space_yaml(name: str, type: str = "managed", provider: str = "git") -> str:
    return (f"apiVersion: space.kubestellar.io/v1alpha1\nkind: Space\n"
            f"metadata: {{name: {name}, namespace: spaceprovider-{provider}}}\n"
            f"spec: {{Type: {type}, SpaceProviderDescName: {provider}}}\n")


def test_reconcile_writes_discovered_spaces(tree: Callable[[dict[str, str]], Path]) -> None:
    repo = tree({"spaces/ctl/providers.yaml": DESC, "spaces/wec-x/cm.yaml": CONFIGMAP,
                 "spaces/wec-y/cm.yaml": CONFIGMAP, "spaces/wec-y/space.yaml": space_yaml("wec-y", "imported"),
                 "spaces/other/cm.yaml": CONFIGMAP})
    result = reconcile(WorkTreeSnapshot(repo))
    assert [str(a) for a in result.spaces.of(WRITE_OBJECT)] == ["WriteSpaceObject wec-x (git)"]
    root = "spaces/wec-x/.ksgitops/space"
    assert result.generated[root] == {"space.yaml": (
        b"apiVersion: space.kubestellar.io/v1alpha1\nkind: Space\nmetadata:\n  name: wec-x\n"
        b"spec:\n  SpaceProviderDescName: git\n  Type: unmanaged\nstatus:\n  Phase: Ready\n")}
    assert result.generated["spaces/wec-y/.ksgitops/space"] is None  # it has its own Space object
    assert result.generated["spaces/other/.ksgitops/space"] is None  # no prefix match
    assert write_generated(repo, result.generated) == [root]
    again = reconcile(WorkTreeSnapshot(repo))  # the generated object is never read as input
    assert again.generated == result.generated and write_generated(repo, again.generated) == []
    # the folder loses its sources: the discovered object goes, and the folder with it
    (repo / "spaces/wec-x/cm.yaml").unlink()
    gone = reconcile(WorkTreeSnapshot(repo))
    assert gone.generated[root] is None and not gone.spaces.of(WRITE_OBJECT)
    write_generated(repo, gone.generated)
    assert not [f for f in (repo / "spaces/wec-x").rglob("*") if f.is_file()]  # (git keeps no empty folder)
    assert not reconcile(WorkTreeSnapshot(repo)).spaces.of(WRITE_OBJECT)


def test_reconcile_leaves_a_space_of_an_unknown_provider_alone(tree: Callable[[dict[str, str]], Path]) -> None:
    """The Space CRD takes any SpaceProviderDescName: a warning, never fatal; the space is not touched."""
    repo = tree({"spaces/ctl/s.yaml": space_yaml("wds2", provider="gti"), "spaces/wds2/cm.yaml": CONFIGMAP})
    result = reconcile(WorkTreeSnapshot(repo))
    assert [str(p) for p in result.problems if p.space == "ctl"] == [
        "spaces/ctl/s.yaml:1: warning: Space wds2: unknown SpaceProviderDesc 'gti' (known: git): the Space is left "
        "alone"]
    assert not result.spaces.actions


def test_reconcile_managed_space_on_kubeconfig_is_an_error(tree: Callable[[dict[str, str]], Path]) -> None:
    desc = DESC.replace("name: git", "name: clusters").replace("ProviderType: git", "ProviderType: kubeconfig")
    repo = tree({"spaces/ctl/p.yaml": desc, "spaces/ctl/s.yaml": space_yaml("wec-a", provider="clusters")})
    broken = reconcile(WorkTreeSnapshot(repo))  # an error of the space ctl: it is frozen, the rest goes on
    assert [p for p in broken.confined_errors if "cannot create or delete spaces" in p.message]
    assert "ctl" in broken.frozen.spaces and b"state: Frozen" in broken.generated["spaces/ctl/.ksgitops/problems.yaml"]
    ok = tree({"spaces/ctl/p.yaml": desc, "spaces/ctl/s.yaml": space_yaml("wec-a", "imported", "clusters")})
    result = reconcile(WorkTreeSnapshot(ok))  # kubeconfig spaces are not observed by reconcile: no writes
    assert [str(a) for a in result.spaces.actions] == ["SetPhase wec-a (clusters) -> NotReady"]
    assert not result.problems


def test_reconcile_warns_about_a_missing_managed_folder(tree: Callable[[dict[str, str]], Path]) -> None:
    repo = tree({"spaces/ctl/s.yaml": space_yaml("wds2")})
    result = reconcile(WorkTreeSnapshot(repo))
    assert [str(p) for p in result.problems] == [
        "spaces/ctl/s.yaml:1: warning: Space wds2: create the folder spaces/wds2 with `ksgitops spaces --apply` "
        "(reconcile creates and deletes mailbox spaces only)"]
    assert not any(k.startswith("spaces/wds2") for k in result.generated)


def test_mailboxes_are_the_plans_managed_spaces(tmp_path: Path) -> None:
    """The plan's CreateSpace/DeleteSpace of mailbox spaces is exactly what emit does."""
    repo = copy_example_sources(tmp_path / "ex")
    first = reconcile(WorkTreeSnapshot(repo))
    assert [str(a) for a in first.spaces.of(CREATE_SPACE)] == ["CreateSpace imw1-mb-florin (git)",
                                                             "CreateSpace imw1-mb-guilder (git)"]
    assert not first.problems  # no warnings for mailboxes
    write_generated(repo, first.generated)
    second = reconcile(WorkTreeSnapshot(repo))
    assert not second.spaces.of(CREATE_SPACE) and not second.spaces.of(DELETE_SPACE)
    (repo / "spaces/imw1/guilder.yaml").unlink()  # the SyncTarget (and Location) go
    third = reconcile(WorkTreeSnapshot(repo))
    assert [str(a) for a in third.spaces.of(DELETE_SPACE)] == ["DeleteSpace imw1-mb-guilder (git)"]
    assert third.generated["spaces/imw1-mb-guilder"] is None
    assert not third.problems or all("guilder" not in str(p) or "EdgePlacement" in str(p) for p in third.problems)


def test_reconcile_commit_writes_discovered_spaces(tree: Callable[[dict[str, str]], Path], cli: Any) -> None:
    from conftest import git, git_init
    repo = git_init(tree({"spaces/ctl/providers.yaml": DESC, "spaces/wec-x/cm.yaml": CONFIGMAP}))
    result = cli("reconcile", str(repo), "--commit")
    assert result.code == 0, result
    assert "Type: unmanaged" in git(repo, "show", "HEAD:spaces/wec-x/.ksgitops/space/space.yaml")
    assert cli("reconcile", str(repo), "--commit").code == 0
    assert git(repo, "rev-list", "--count", "HEAD") == "2"  # nothing more to commit
