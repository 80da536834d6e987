"""What the tests of `ksgitops sync` (tests/test_sync*.py) share: a fleet reconciled and pushed to a
bare remote the agent reads and pushes to (fixtures `fleet`, `widget_fleet`), the WEC with its
inventory namespace (fixture `wec`), one agent cycle (`sync`), and reads of what it applied,
wrote and reported."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conftest import git, git_init, write_tree
from kube_fixtures import KubeNames, Wec, isolate, widget_wds
from kubewire import KubeWire
from ksgitops.app.agent import desired_objects
from ksgitops.io.fs.tree import WorkTreeSnapshot


FLORIN = "imw1-mb-florin"
REF = f"refs/heads/ksgitops/reported/{FLORIN}"


@dataclass
class Fleet:
    work: Path  # where sources are edited and reconciled
    remote: Path  # the bare repository the agents read and push to
    cache: Path
    names: KubeNames  # cluster-level names of the test's own (the example's namespaces renamed)

    def publish(self, cli, message: str = "change") -> None:
        """Commit the source edits, reconcile them into a commit, push main to the remote."""
        if git(self.work, "status", "--porcelain"):
            git(self.work, "add", "-A")
            git(self.work, "commit", "-q", "-m", message)
        result = cli("reconcile", str(self.work), "--commit")
        assert result.code == 0, result
        git(self.work, "push", "-q", str(self.remote), "main")


def make_fleet(work: Path, cli, tmp_path: Path, names: KubeNames) -> Fleet:
    result = cli("reconcile", str(work), "--commit")
    assert result.code == 0, result
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(remote)], check=True, capture_output=True)
    return Fleet(work, remote, tmp_path / "cache", names)


@pytest.fixture
def fleet(example: Path, cli, tmp_path: Path, kube_names: KubeNames) -> Fleet:
    return make_fleet(git_init(isolate(example, kube_names)), cli, tmp_path, kube_names)


@pytest.fixture
def widget_fleet(example: Path, cli, tmp_path: Path, kube_names: KubeNames) -> Fleet:
    """The example with a CRD and a widget placed on florin too (see kube_fixtures.widget_wds)."""
    write_tree(isolate(example, kube_names), widget_wds(kube_names))
    return make_fleet(git_init(example, "widgets"), cli, tmp_path, kube_names)


@pytest.fixture
def wec(kube_wec: Wec, unique_ns: str) -> Wec:
    """The WEC, with the namespace its agent keeps its inventory in (`unique_ns`) made beforehand."""
    return kube_wec


def sync(cli, fleet: Fleet, wec: Wec, *extra: str, mailbox: str = FLORIN, cache: Path | None = None):
    return cli("sync", "--mailbox", mailbox, "--kubeconfig", str(wec.kubeconfig), "--context", wec.context,
               "--repo", str(fleet.remote), "--cache-dir", str(cache or fleet.cache), "--once",
               "--inventory-namespace", fleet.names.ns(), *extra)


def objects(repo: Path, mailbox: str = FLORIN):
    return desired_objects(WorkTreeSnapshot(repo).read_tree(f"spaces/{mailbox}"))


def live(wec: Wec, d):
    with wec.api() as api:
        return api.get(d.api_version, d.resource, d.namespace, d.name)


def gone(obj) -> bool:
    """Deleted: absent, or on its way out (a real Namespace stays Terminating until emptied)."""
    return obj is None or bool(obj["metadata"].get("deletionTimestamp"))


def writes(wire: KubeWire, since: int = 0, inventory: bool = False):
    return [r for r in wire.writes(since) if inventory or "ksgitops-inventory" not in r.path]


def set_status(wec: Wec, d, status: dict) -> None:
    """Only for a custom resource: a workload's status is its controller's."""
    assert d.kind not in ("ReplicaSet", "Deployment"), d
    with wec.api() as api:
        api.set_status(d.api_version, d.resource, d.namespace, d.name, status)


def widget(fleet: Fleet):
    return next(d for d in objects(fleet.work) if d.kind == "Widget")


def main_fields_managers(obj) -> set[tuple[str, str]]:
    """Who manages the object itself (a controller's entries for the status subresource aside)."""
    return {(e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"] if e.get("subresource") != "status"}


def remote_file(fleet: Fleet, path: str, ref: str = REF) -> str:
    return git(fleet.remote, "show", f"{ref}:{path}")


def edit_yaml(path: Path, change) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    path.write_text(yaml.safe_dump_all([d for d in (change(d) for d in docs) if d is not None], sort_keys=False))
