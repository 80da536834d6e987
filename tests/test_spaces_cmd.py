"""`ksgitops spaces [REPO] [--kubeconfig F] [--apply] [-o json]`: the space manager on a work tree.

Managed git spaces are created for their Space objects and deleted with them; discovered folders and
kubeconfig contexts get Space objects written (generated files) and lose them when they go; phases
are written to generated files, never into source files (docs/SPACES.md, "The spaces command")."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from conftest import CliResult, copy_example_sources

Tree = Callable[[dict[str, str | bytes]], Path]
Cli = Callable[..., CliResult]
API = "space.kubestellar.io/v1alpha1"
CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: default}\ndata: {a: b}\n"


def space(name: str, type: str = "managed", provider: str = "", deleting: bool = False) -> str:
    spec = f"  Type: {type}\n" + (f"  SpaceProviderDescName: {provider}\n" if provider else "")
    extra = "  deletionTimestamp: '2024-01-01T00:00:00Z'\n" if deleting else ""
    return f"apiVersion: {API}\nkind: Space\nmetadata:\n  name: {name}\n  namespace: spaces\n{extra}spec:\n{spec}"


def desc(name: str, type: str = "git", prefix: str = "", config: str = "") -> str:
    spec = f"  ProviderType: {type}\n" + (f"  SpacePrefixForDiscovery: {prefix}\n" if prefix else "") + \
        (f"  Config: {config}\n" if config else "")
    return f"apiVersion: {API}\nkind: SpaceProviderDesc\nmetadata:\n  name: {name}\nspec:\n{spec}"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def ok(result: CliResult, code: int = 0) -> CliResult:
    assert result.code == code, result
    return result


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---- managed git spaces

def test_a_managed_space_is_created_for_its_object_and_deleted_with_it(tree: Tree, cli: Cli) -> None:
    repo = tree({"spaces/ctl/wds2.yaml": space("wds2"), "spaces/ctl/cm.yaml": CM})
    source = (repo / "spaces/ctl/wds2.yaml").read_bytes()
    dry = ok(cli("spaces", str(repo)))
    assert "CreateSpace wds2 (git)" in dry.out and "run with --apply" in dry.out
    assert not (repo / "spaces/wds2").exists()  # without --apply nothing changes
    out = ok(cli("spaces", str(repo), "--apply")).out
    assert "done: CreateSpace wds2 (git)" in out and "done: SetPhase wds2 (git) -> Ready" in out
    marker = load(repo / "spaces/wds2/.ksgitops/managed-space.yaml")
    assert marker["spec"] == {"SpaceProviderDescName": "git", "Type": "managed"}
    # the phase goes to a generated file beside the object's space, never into the source file
    assert (repo / "spaces/ctl/wds2.yaml").read_bytes() == source
    status = load(repo / "spaces/ctl/.ksgitops/space-status/wds2.yaml")
    assert status == {"apiVersion": API, "kind": "Space", "metadata": {"name": "wds2", "namespace": "spaces"},
                      "status": {"Phase": "Ready"}}
    row = [line.split() for line in out.splitlines() if line.startswith("wds2 ")][0]
    assert row[:5] == ["wds2", "git", "managed", "Ready", "Ready"] and row[-1] == "spaces/ctl/wds2.yaml:1"
    # the created folder is a valid space of the repo: its marker is not a second Space object
    ok(cli("validate", str(repo)))
    (repo / "spaces/wds2/app.yaml").write_text(CM)  # the user fills it
    assert ok(cli("spaces", str(repo))).out.rstrip().endswith("nothing to do")
    # while the object exists the space stays; once it is gone, the space goes (and its phase file)
    (repo / "spaces/ctl/wds2.yaml").unlink()
    warned = ok(cli("reconcile", str(repo)))
    assert "remove the folder spaces/wds2 with `ksgitops spaces --apply`" in warned.err
    out = ok(cli("spaces", str(repo), "--apply")).out
    assert "done: DeleteSpace wds2 (git)" in out
    assert "removed: spaces/ctl/.ksgitops/space-status/wds2.yaml" in out
    assert not (repo / "spaces/wds2").exists() and not (repo / "spaces/ctl/.ksgitops").exists()


def test_second_apply_does_nothing(tree: Tree, cli: Cli) -> None:
    repo = tree({"spaces/ctl/s.yaml": space("wds2") + "---\n" + space("imp", "imported") + "---\n"
                 + desc("git", prefix="wec-"), "spaces/wec-a/cm.yaml": CM, "spaces/other/cm.yaml": CM})
    first = ok(cli("spaces", str(repo), "--apply")).out
    assert "applied: 5 done" in first  # create, Initializing, Ready; imp NotReady; wec-a discovered
    before = files(repo)
    second = ok(cli("spaces", str(repo), "--apply")).out
    assert "applied: 0 done, 0 failed, 0 skipped, 0 left, 0 stale files removed" in second
    assert files(repo) == before
    assert ok(cli("spaces", str(repo))).out.rstrip().endswith("nothing to do")
    assert not (repo / "spaces/imp").exists()  # imported: never created


def test_a_deleting_source_object_releases_its_space_first(tree: Tree, cli: Cli) -> None:
    repo = tree({"spaces/ctl/s.yaml": space("wds2")})
    ok(cli("spaces", str(repo), "--apply"))
    (repo / "spaces/ctl/s.yaml").write_text(space("wds2", deleting=True))
    out = ok(cli("spaces", str(repo), "--apply")).out
    assert "done: DeleteSpace wds2 (git)" in out and not (repo / "spaces/wds2").exists()
    assert "left: DeleteSpaceObject wds2 (git) (the Space object is defined at spaces/ctl/s.yaml:1: remove it " \
           "there" in out


# ---- discovery over the git provider

def test_a_discovered_folder_gets_its_space_object_and_loses_it(tree: Tree, cli: Cli) -> None:
    repo = tree({"spaces/ctl/p.yaml": desc("git", prefix="wec-"), "spaces/wec-a/cm.yaml": CM,
                 "spaces/app/cm.yaml": CM})
    out = ok(cli("spaces", str(repo), "--apply")).out
    assert [line for line in out.splitlines() if line.startswith("done:")] == ["done: WriteSpaceObject wec-a (git)"]
    written = repo / "spaces/wec-a/.ksgitops/space/space.yaml"
    assert load(written) == {"apiVersion": API, "kind": "Space", "metadata": {"name": "wec-a"},
                             "spec": {"SpaceProviderDescName": "git", "Type": "unmanaged"},
                             "status": {"Phase": "Ready"}}
    assert not (repo / "spaces/app/.ksgitops").exists()  # no prefix: not discovered
    # reconcile writes the same file: the two agree
    assert "0 generated folders changed" in ok(cli("reconcile", str(repo))).out
    # the folder's sources go: the space is gone, so is its object (and the leftover folder)
    (repo / "spaces/wec-a/cm.yaml").unlink()
    out = ok(cli("spaces", str(repo), "--apply")).out
    assert "done: DeleteSpaceObject wec-a (git)" in out
    assert not (repo / "spaces/wec-a").exists()
    # a discovered folder removed outright takes its object with it
    (repo / "spaces/wec-b").mkdir()
    (repo / "spaces/wec-b/cm.yaml").write_text(CM)
    ok(cli("spaces", str(repo), "--apply"))
    shutil.rmtree(repo / "spaces/wec-b")
    assert "wec-b" not in ok(cli("spaces", str(repo), "-o", "json")).out


def test_a_source_object_shadows_a_discovered_one(tree: Tree, cli: Cli) -> None:
    repo = tree({"spaces/ctl/p.yaml": desc("git", prefix="wec-"), "spaces/wec-a/cm.yaml": CM})
    ok(cli("spaces", str(repo), "--apply"))
    (repo / "spaces/ctl/s.yaml").write_text(space("wec-a", "imported"))
    dry = ok(cli("spaces", str(repo))).out
    assert "spaces/wec-a/.ksgitops/space/space.yaml" in dry  # listed as stale, not a duplicate error
    out = ok(cli("spaces", str(repo), "--apply")).out
    assert "removed: spaces/wec-a/.ksgitops/space/space.yaml" in out
    assert "SetPhase wec-a (git) -> Ready" in out


# ---- mailboxes are reconcile's

def test_mailboxes_are_listed_and_left_to_reconcile(tmp_path: Path, cli: Cli) -> None:
    repo = copy_example_sources(tmp_path / "ex")
    out = ok(cli("spaces", str(repo), "--apply")).out
    assert "left: CreateSpace imw1-mb-florin (git) (mailbox: `ksgitops reconcile`" in out
    assert not (repo / "spaces/imw1-mb-florin").exists()
    ok(cli("reconcile", str(repo)))
    out = ok(cli("spaces", str(repo))).out
    assert out.rstrip().endswith("nothing to do")
    row = [line.split() for line in out.splitlines() if line.startswith("imw1-mb-florin ")][0]
    assert row[:5] == ["imw1-mb-florin", "git", "managed", "Ready", "Ready"] and "SyncTarget" in row


# ---- errors

@pytest.mark.parametrize("files_, expected", [
    # what the space-framework CRDs accept is a warning: the Space is left alone, the rest applied
    ({"spaces/ctl/p.yaml": desc("s3-bucket", "s3"), "spaces/ctl/s.yaml": space("wds2", provider="s3-bucket")},
     "spaces/ctl/s.yaml:1: warning: Space wds2: its SpaceProviderDesc s3-bucket has ProviderType 's3', which "
     "ksgitops does not drive"),
    ({"spaces/ctl/s.yaml": "# a comment\n" + space("wds2", provider="gti")},
     "spaces/ctl/s.yaml:2: warning: Space wds2: unknown SpaceProviderDesc 'gti' (known: git): the Space is left alone"),
    ({"spaces/ctl/s.yaml": space("wds2").replace("  namespace: spaces\n", "")},
     "spaces/ctl/s.yaml:1: warning: Space wds2 has no metadata.namespace: read in namespace default"),
])
def test_what_the_crds_accept_is_a_warning(tree: Tree, cli: Cli, files_: dict[str, str], expected: str) -> None:
    repo = tree({**files_, "spaces/ctl/wds9.yaml": space("wds9")})
    result = ok(cli("spaces", str(repo), "--apply"))
    assert expected in result.err, result
    assert "done: SetPhase wds9 (git) -> Ready" in result.out


@pytest.mark.parametrize("files_, expected", [
    ({"spaces/ctl/p.yaml": desc("clusters", "kubeconfig")},
     "spaces/ctl/p.yaml:1: SpaceProviderDesc clusters: a kubeconfig provider needs spec.Config"),
    ({"spaces/ctl/p.yaml": desc("clusters", "kubeconfig", config="kc"), "spaces/ctl/s.yaml": space("wec-a", provider="clusters")},
     "spaces/ctl/s.yaml:1: Space wec-a: provider clusters (kubeconfig) cannot create or delete spaces"),
    ({"spaces/ctl/p.yaml": desc("git") + "---\n" + desc("git", prefix="x")},
     "spaces/ctl/p.yaml:8: SpaceProviderDesc.space.kubestellar.io git is defined twice"),
    ({"spaces/ctl/s.yaml": "kind: Space\nspec: [\n"}, "spaces/ctl/s.yaml:3: malformed YAML"),
])
def test_invalid_objects_exit_2_with_file_and_line(tree: Tree, cli: Cli, files_: dict[str, str],
                                                     expected: str) -> None:
    repo = tree({**files_, "spaces/ctl/wds9.yaml": space("wds9")})
    before = files(repo)
    result = ok(cli("spaces", str(repo), "--apply"), 2)
    assert expected in result.err
    assert files(repo) == before  # nothing applied
    data = json.loads(ok(cli("spaces", str(repo), "-o", "json"), 2).out)
    assert any(f"{p['file']}:{p['line']}: {p['message']}".startswith(expected) for p in data["problems"])


def test_unknown_kubeconfig_provider_argument(tree: Tree, cli: Cli) -> None:
    repo = tree({"spaces/ctl/cm.yaml": CM})
    assert "no kubeconfig SpaceProviderDesc named clusters" in ok(cli("spaces", str(repo), "--kubeconfig",
                                                                        "clusters=/nope"), 2).err


# ---- kubeconfig provider over loopback API servers

def test_kubeconfig_provider_phases(tree: Tree, cli: Cli, kube_wecs: Callable[[list[str]], Any]) -> None:
    wecs = kube_wecs(["wec-florin", "wec-guilder", "admin"])
    repo = tree({"spaces/ctl/p.yaml": desc("clusters", "kubeconfig", prefix="wec-"),
                 "spaces/ctl/s.yaml": space("admin", "imported", "clusters")})
    dry = ok(cli("spaces", str(repo), "--kubeconfig", str(wecs.kubeconfig))).out
    assert "WriteSpaceObject wec-florin (clusters)" in dry and "SetPhase admin (clusters) -> Ready" in dry
    out = ok(cli("spaces", str(repo), "--kubeconfig", f"clusters={wecs.kubeconfig}", "--apply")).out
    assert "applied: 3 done, 0 failed" in out
    found = repo / "spaces/ctl/.ksgitops/discovered/clusters"
    assert sorted(p.name for p in found.iterdir()) == ["wec-florin.yaml", "wec-guilder.yaml"]
    assert load(found / "wec-florin.yaml")["status"] == {"Phase": "Ready"}
    assert load(found / "wec-florin.yaml")["spec"] == {"SpaceProviderDescName": "clusters", "Type": "unmanaged"}
    assert load(repo / "spaces/ctl/.ksgitops/space-status/admin.yaml")["status"] == {"Phase": "Ready"}
    # one cluster stops answering: NotReady (its object stays: the context is still there)
    wecs["wec-guilder"].wire.unreachable = True
    wecs["admin"].wire.unreachable = True
    out = ok(cli("spaces", str(repo), "--kubeconfig", str(wecs.kubeconfig), "--apply", "-o", "json")).out
    data = json.loads(out)
    phases = {r["name"]: (r["type"], r["phase"], r["observed"]) for r in data["spaces"] if r["provider"] == "clusters"}
    assert phases == {"admin": ("imported", "NotReady", "NotReady"),
                      "wec-florin": ("unmanaged", "Ready", "Ready"),
                      "wec-guilder": ("unmanaged", "NotReady", "NotReady")}
    assert sorted(a["space"] for a in data["applied"]["done"]) == ["admin", "wec-guilder"]
    assert load(found / "wec-guilder.yaml")["status"] == {"Phase": "NotReady"}
    assert load(repo / "spaces/ctl/.ksgitops/space-status/admin.yaml")["status"] == {"Phase": "NotReady"}
    # the context leaves the kubeconfig: the discovered space's object goes
    kc = load(wecs.kubeconfig)
    kc["contexts"] = [c for c in kc["contexts"] if c["name"] != "wec-guilder"]
    wecs.kubeconfig.write_text(yaml.safe_dump(kc))
    out = ok(cli("spaces", str(repo), "--kubeconfig", str(wecs.kubeconfig), "--apply")).out
    assert "done: DeleteSpaceObject wec-guilder (clusters)" in out
    assert sorted(p.name for p in found.iterdir()) == ["wec-florin.yaml"]
    # the kubeconfig file unreadable: a warning, phases NotReady, nothing forgotten
    result = ok(cli("spaces", str(repo), "--kubeconfig", str(repo / "missing"), "--apply"))
    assert "spaces/ctl/p.yaml:1: warning: provider clusters is unreachable" in result.err
    assert load(found / "wec-florin.yaml")["status"] == {"Phase": "NotReady"}
    # the provider is removed from the repo: what was written for it is stale and pruned
    (repo / "spaces/ctl/p.yaml").unlink()
    (repo / "spaces/ctl/s.yaml").unlink()
    out = ok(cli("spaces", str(repo), "--apply")).out
    assert "removed: spaces/ctl/.ksgitops/discovered/clusters" in out
    assert not (repo / "spaces/ctl/.ksgitops").exists()


def test_kubeconfig_config_path_is_relative_to_the_repo(tree: Tree, cli: Cli,
                                                          kube_wecs: Callable[[list[str]], Any]) -> None:
    wecs = kube_wecs(["wec-a"])
    repo = tree({"spaces/ctl/p.yaml": desc("clusters", "kubeconfig", prefix="wec-", config="clusters.kubeconfig")})
    shutil.copy(wecs.kubeconfig, repo / "clusters.kubeconfig")
    data = json.loads(ok(cli("spaces", str(repo), "-o", "json")).out)
    assert {"name": "wec-a", "provider": "clusters", "type": None, "phase": None, "owner": None, "object": None,
            "observed": "Ready"} in data["spaces"]


# ---- JSON

def test_json_output_shape(tree: Tree, cli: Cli) -> None:
    repo = tree({"spaces/ctl/s.yaml": space("wds2"), "spaces/ctl/p.yaml": desc("git", prefix="wec-"),
                 "spaces/wec-a/cm.yaml": CM})
    data = json.loads(ok(cli("spaces", str(repo), "-o", "json")).out)
    assert set(data) == {"spaces", "actions", "problems", "applied", "stale"} and data["applied"] is None
    assert data["actions"] == [{"op": "CreateSpace", "space": "wds2", "provider": "git"},
                               {"op": "SetPhase", "space": "wds2", "provider": "git", "phase": "Initializing"},
                               {"op": "WriteSpaceObject", "space": "wec-a", "provider": "git", "phase": "Ready"}]
    assert data["spaces"] == [
        {"name": "ctl", "provider": "git", "type": None, "phase": None, "owner": None, "object": None,
         "observed": "Ready"},
        {"name": "wds2", "provider": "git", "type": "managed", "phase": None, "owner": None,
         "object": "spaces/ctl/s.yaml:1", "observed": "missing"},
        {"name": "wec-a", "provider": "git", "type": None, "phase": None, "owner": None, "object": None,
         "observed": "Ready"}]
    applied = json.loads(ok(cli("spaces", str(repo), "--apply", "-o", "json")).out)
    assert set(applied["applied"]) == {"done", "failed", "skipped", "left", "removed"}
    assert [a["op"] for a in applied["applied"]["done"]] == ["CreateSpace", "SetPhase", "WriteSpaceObject",
                                                             "SetPhase"]
    rows = {r["name"]: r for r in applied["spaces"]}
    assert rows["wds2"]["phase"] == "Ready" and rows["wds2"]["observed"] == "Ready"
    assert rows["wec-a"] == {"name": "wec-a", "provider": "git", "type": "unmanaged", "phase": "Ready",
                             "owner": "ksgitops", "object": "spaces/wec-a/.ksgitops/space/space.yaml",
                             "observed": "Ready"}
