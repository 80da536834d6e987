"""Space providers (git folders, kubeconfig files), the space manager applying core plans, and the
space-aware client over git spaces (list and watch, with the space-name annotation). The
kubeconfig provider against API servers: tests/test_spaceproviders_kube.py."""
from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksgitops.core.place.spaces import (CREATE_SPACE, SET_PHASE, Observed, ProviderDesc, SpaceObj, SPACE_NAME_ANNOTATION)
from fakes.stores import FolderStore, MemoryStore
from ksgitops.io.spaces import (ADDED, DELETED, MODIFIED, GitFolderProvider, GitSpaceClient, KubeconfigProvider,
                                NotSupported, ProviderError, SpaceClients, SpaceEvent, SpaceManager, annotate,
                                providers_from, selector_string, space_client)
from ksgitops.model import KsgitopsError
from space_fixtures import CM, collect, wait_for
from space_fixtures import repo  # noqa: F401 - the fixture


# ---- git provider

def test_git_provider_lists_folders_with_the_managed_marker(repo: Path) -> None:
    git = GitFolderProvider(repo)
    (repo / "spaces" / ".hidden").mkdir()
    (repo / "spaces" / "README.md").write_text("not a space")
    assert git.list() == [Observed("imw1"), Observed("imw1-mb-florin", "Ready", True),
                          Observed("imw1-mb-guilder", "Ready", True), Observed("wmw-c"), Observed("wmw-s")]
    assert git.get("imw1-mb-florin") == Observed("imw1-mb-florin", "Ready", True)
    assert git.get("nope") is None


def test_git_provider_create_and_delete(tmp_path: Path) -> None:
    git = GitFolderProvider(tmp_path, name="repo")
    assert git.list() == []  # no spaces/ yet
    git.create("wds2")
    # the managed marker lives under .ksgitops/: never input, so never a second Space object
    assert not (tmp_path / "spaces" / "wds2" / "space.yaml").exists()
    body = yaml.safe_load((tmp_path / "spaces" / "wds2" / ".ksgitops" / "managed-space.yaml").read_text())
    assert body == {"apiVersion": "space.kubestellar.io/v1alpha1", "kind": "Space", "metadata": {"name": "wds2"},
                    "spec": {"SpaceProviderDescName": "repo", "Type": "managed"}}
    assert git.get("wds2") == Observed("wds2", "Ready", True)
    (tmp_path / "spaces" / "wds2" / "cm.yaml").write_text("apiVersion: v1\n")
    git.create("wds2")  # idempotent: the folder is left as it is
    assert (tmp_path / "spaces" / "wds2" / "cm.yaml").exists()
    git.delete("wds2")
    git.delete("wds2")  # idempotent
    assert git.list() == [] and not list((tmp_path / "spaces").iterdir())
    with pytest.raises(ProviderError, match="not a DNS-1123 label"):
        git.create("../escape")


def test_git_provider_unreachable(tmp_path: Path) -> None:
    git = GitFolderProvider(tmp_path / "missing")
    with pytest.raises(ProviderError):
        git.list()
    manager = SpaceManager([git], MemoryStore([SpaceObj("a", phase="Ready")]))
    assert manager.observe() == {"git": None}
    applied = manager.reconcile()
    assert [str(a) for a in applied.done] == ["SetPhase a (git) -> NotReady"]  # nothing created


def test_git_provider_watch(tmp_path: Path) -> None:
    git = GitFolderProvider(tmp_path, interval=0.2)
    (tmp_path / "spaces").mkdir()
    stop = threading.Event()
    events: list[SpaceEvent] = []
    thread = collect(git.watch(stop=stop, timeout=20), events)
    time.sleep(0.3)
    (tmp_path / "spaces" / "wec-a").mkdir()
    (tmp_path / "spaces" / "wec-a" / "x.yaml").write_text("a: 1\n")
    wait_for(lambda: any(e.type == ADDED for e in events))
    git.create("managed1")
    wait_for(lambda: any(e.space.name == "managed1" for e in events))
    shutil.rmtree(tmp_path / "spaces" / "wec-a")
    wait_for(lambda: any(e.type == DELETED for e in events))
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    assert events[0] == SpaceEvent(ADDED, Observed("wec-a"), "git")
    assert SpaceEvent(ADDED, Observed("managed1", "Ready", True), "git") in events
    assert events[-1] == SpaceEvent(DELETED, Observed("wec-a"), "git")


def test_git_provider_watch_ends_at_its_timeout(tmp_path: Path) -> None:
    started = time.monotonic()
    assert list(GitFolderProvider(tmp_path, interval=0.1).watch(timeout=0.5)) == []
    assert time.monotonic() - started < 5


# ---- the manager over the git provider

def test_manager_lifecycle_with_git(tmp_path: Path) -> None:
    git = GitFolderProvider(tmp_path, prefix="wec-")
    store = MemoryStore([SpaceObj("wds2"), SpaceObj("imp", "imported")])
    manager = SpaceManager([git], store)
    applied = manager.reconcile()
    assert applied.ok and [str(a) for a in applied.done] == [
        "SetPhase imp (git) -> NotReady", "CreateSpace wds2 (git)", "SetPhase wds2 (git) -> Initializing"]
    assert (tmp_path / "spaces" / "wds2" / ".ksgitops" / "managed-space.yaml").is_file()
    assert not (tmp_path / "spaces" / "imp").exists()  # imported: never created
    assert [str(a) for a in manager.reconcile().done] == ["SetPhase wds2 (git) -> Ready"]  # git is ready at once
    assert not manager.plan()
    # discovery: a folder with the prefix gets an unmanaged Space object; it goes when the folder goes
    (tmp_path / "spaces" / "wec-a").mkdir()
    assert [str(a) for a in manager.reconcile().done] == ["WriteSpaceObject wec-a (git)"]
    assert store.objects["wec-a"] == SpaceObj("wec-a", "unmanaged", "git", "Ready")
    (tmp_path / "spaces" / "wec-a").rmdir()
    assert [str(a) for a in manager.reconcile().done] == ["DeleteSpaceObject wec-a (git)"]
    # deleting the managed Space object deletes the space (finalizer: the object goes last)
    store.write(SpaceObj("wds2", phase="Ready", deleting=True))
    assert [str(a) for a in manager.reconcile().done] == ["DeleteSpace wds2 (git)", "DeleteSpaceObject wds2 (git)"]
    assert not (tmp_path / "spaces" / "wds2").exists() and "wds2" not in store.objects
    assert not manager.plan()


def test_manager_stops_at_a_failed_action(tmp_path: Path) -> None:
    class Failing(GitFolderProvider):
        def create(self, name: str) -> None:
            raise ProviderError("disk full")

    manager = SpaceManager([Failing(tmp_path)], MemoryStore([SpaceObj("a"), SpaceObj("b", "imported")]))
    applied = manager.reconcile()
    assert [(str(a), e) for a, e in applied.failed] == [("CreateSpace a (git)", "ksgitops: disk full")]
    assert [str(a) for a in applied.skipped] == ["SetPhase a (git) -> Initializing"]
    assert [str(a) for a in applied.done] == ["SetPhase b (git) -> NotReady"]
    assert not applied.ok


def test_folder_store_round_trip(tmp_path: Path) -> None:
    store = FolderStore(tmp_path / "store")
    assert store.list() == []
    store.write(SpaceObj("wec-a", "unmanaged", "clusters", "Ready"))
    store.set_phase("wec-a", "NotReady")
    [got] = store.list()
    assert (got.name, got.type, got.provider, got.phase) == ("wec-a", "unmanaged", "clusters", "NotReady")
    store.delete("wec-a")
    assert store.list() == []


# ---- kubeconfig provider (files only)

def kubeconfig(path: Path, contexts: dict[str, str]) -> Path:
    doc = {"apiVersion": "v1", "kind": "Config",
           "clusters": [{"name": n, "cluster": {"server": url}} for n, url in contexts.items()],
           "users": [{"name": n, "user": {"token": "secret-token"}} for n in contexts],
           "contexts": [{"name": n, "context": {"cluster": n, "user": n, "namespace": "default"}} for n in contexts]}
    path.write_text(yaml.safe_dump(doc))
    return path


def test_kubeconfig_provider_from_a_file(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"wec-b": "https://b:6443", "wec-a": "https://a:6443"})
    provider = KubeconfigProvider(path, "clusters", "wec-", probe=False)
    assert provider.list() == [Observed("wec-a"), Observed("wec-b")]
    assert provider.get("wec-a") == Observed("wec-a") and provider.get("x") is None
    info = provider.connection("wec-a")
    assert info == {"context": "wec-a", "cluster": "wec-a", "user": "wec-a", "server": "https://a:6443",
                    "namespace": "default"}
    assert "secret-token" not in repr(info)
    with pytest.raises(NotSupported, match="provisioned outside ksgitops"):
        provider.create("wec-c")
    with pytest.raises(NotSupported):
        provider.delete("wec-a")
    with pytest.raises(ProviderError, match="cannot read"):
        KubeconfigProvider(tmp_path / "missing").list()


def test_manager_discovers_contexts(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"wec-a": "https://a:6443", "admin": "https://x:6443"})
    store = MemoryStore([SpaceObj("wec-m", "managed", "clusters")])
    manager = SpaceManager([KubeconfigProvider(path, "clusters", "wec-", probe=False)], store)
    p = manager.plan()
    assert "cannot create or delete spaces" in str(p.problems[0]) and not p.of(CREATE_SPACE)
    manager.apply(p)
    assert store.objects["wec-a"] == SpaceObj("wec-a", "unmanaged", "clusters", "Ready")
    assert "admin" not in store.objects
    kubeconfig(path, {"admin": "https://x:6443"})  # the context is removed
    manager.reconcile()
    assert "wec-a" not in store.objects
    path.unlink()  # unreachable provider: objects are kept, NotReady
    store.write(SpaceObj("wec-z", "unmanaged", "clusters", "Ready"))
    assert store.objects["wec-m"].phase == "NotReady"  # imported in effect, and not there
    assert [str(a) for a in manager.reconcile().done] == ["SetPhase wec-z (clusters) -> NotReady"]
    assert "wec-z" in store.objects


def test_kubeconfig_watch_sees_contexts(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc", {"wec-a": "https://a:6443"})
    provider = KubeconfigProvider(path, "clusters", probe=False, interval=0.2)
    stop = threading.Event()
    events: list[SpaceEvent] = []
    thread = collect(provider.watch(stop=stop, timeout=20), events)
    time.sleep(0.3)
    kubeconfig(path, {"wec-a": "https://a:6443", "wec-b": "https://b:6443"})
    wait_for(lambda: bool(events))
    stop.set()
    thread.join(5)
    assert events == [SpaceEvent(ADDED, Observed("wec-b"), "clusters")]


def test_providers_from_descs(tmp_path: Path) -> None:
    found = providers_from([ProviderDesc("git", "git", "wec-"), ProviderDesc("c", "kubeconfig", "", str(tmp_path / "k"))],
                           tmp_path)
    assert isinstance(found[0], GitFolderProvider) and found[0].root == tmp_path and found[0].prefix == "wec-"
    assert isinstance(found[1], KubeconfigProvider) and found[1].path == tmp_path / "k"
    with pytest.raises(ProviderError, match="needs Config"):
        providers_from([ProviderDesc("c", "kubeconfig")], tmp_path)


def test_kubernetes_is_imported_lazily() -> None:
    code = "import sys, ksgitops.io.spaces; print('kubernetes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "False"


# ---- git space client

def test_git_space_client_lists_objects(repo: Path) -> None:
    sc = space_client("wmw-c", [GitFolderProvider(repo)])
    assert isinstance(sc, GitSpaceClient)
    kinds = [(o["kind"], o["metadata"]["name"]) for o in sc.list()]
    assert ("EdgePlacement", "edge-placement-c") in kinds and ("ConfigMap", "httpd-htdocs") in kinds
    assert not any(o["kind"] == "CombinedStatus" for o in sc.list())  # .ksgitops/ is never input
    assert [o["metadata"]["name"] for o in sc.list("v1", "Namespace")] == ["commonstuff"]
    assert sc.list(selector={"matchLabels": {"nope": "x"}}) == []
    with pytest.raises(KsgitopsError, match="label selector"):
        sc.list(selector={"matchLabels": {"bad key!": "x"}})


def test_git_space_client_renders_a_mailbox(repo: Path) -> None:
    objs = GitSpaceClient(repo, "imw1-mb-guilder").list(api_version="apps/v1", kind="ReplicaSet")
    [rs] = objs
    assert rs["metadata"]["labels"]["edge.kubestellar.io/projected"] == "yes"
    env = rs["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"]
    assert "env is" in env and "%(" not in env  # customized: base + patch


def test_git_space_client_reports_bad_files(repo: Path) -> None:
    (repo / "spaces" / "wmw-s" / "broken.yaml").write_text("a: [\n")
    with pytest.raises(KsgitopsError, match="broken.yaml"):
        GitSpaceClient(repo, "wmw-s").list()


def test_git_space_watch(repo: Path) -> None:
    clients = SpaceClients([GitFolderProvider(repo, interval=0.2)])
    stop = threading.Event()
    events: list[Any] = []
    thread = collect(clients.watch(["wmw-c", "wmw-s"], "v1", "ConfigMap", stop=stop, timeout=30), events)
    wait_for(lambda: len(events) == 2)  # the ConfigMaps there now
    path = repo / "spaces" / "wmw-s" / "extra.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: specialstuff}\n")
    wait_for(lambda: len(events) == 3)
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: specialstuff}\ndata: {a: b}\n")
    wait_for(lambda: len(events) == 4)
    path.unlink()
    wait_for(lambda: len(events) == 5)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    seen = [(e.type, e.space, e.object["metadata"]["name"]) for e in events]
    assert sorted(seen[:2]) == [(ADDED, "wmw-c", "httpd-htdocs"), (ADDED, "wmw-s", "httpd-htdocs")]
    assert seen[2:] == [(ADDED, "wmw-s", "extra"), (MODIFIED, "wmw-s", "extra"), (DELETED, "wmw-s", "extra")]
    assert events[3].object["data"] == {"a": "b"}


# ---- helpers

def test_selector_string() -> None:
    assert selector_string(None) is None
    assert selector_string({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [
        {"key": "env", "operator": "In", "values": ["x", "y"]}, {"key": "t", "operator": "NotIn", "values": ["z"]},
        {"key": "e", "operator": "Exists"}, {"key": "d", "operator": "DoesNotExist"}]}) == \
        "a=1,b=2,env in (x,y),t notin (z),e,!d"


def test_annotate_copies() -> None:
    body = {**CM, "metadata": {"name": "x", "annotations": {"a": "b"}}}
    got = annotate(body, "s1")
    assert got["metadata"]["annotations"] == {"a": "b", SPACE_NAME_ANNOTATION: "s1"}
    assert body["metadata"]["annotations"] == {"a": "b"}


def test_ambiguous_and_unknown_space_names(tmp_path: Path) -> None:
    a, b = GitFolderProvider(tmp_path / "a", "a"), GitFolderProvider(tmp_path / "b", "b")
    a.create("s")
    b.create("s")
    with pytest.raises(ProviderError, match="exists in providers a, b"):
        SpaceClients([a, b]).client("s")
    with pytest.raises(ProviderError, match="no provider has a space named 'x'"):
        SpaceClients([a]).client("x")


def test_manager_set_phase_goes_to_the_store() -> None:
    store = MemoryStore([SpaceObj("a", "imported")])
    manager = SpaceManager([], store, descs=[ProviderDesc("git", "git")])
    assert [a.op for a in manager.plan().actions] == [SET_PHASE]  # git not observed: NotReady
    manager.reconcile()
    assert store.objects["a"].phase == "NotReady"
