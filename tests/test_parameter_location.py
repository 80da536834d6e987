"""The Location whose labels and annotations customize an object on a WEC is one through which the
object's own placements reached the WEC (the first by name among those): another WDS's placements
and the Locations only they match change nothing (docs/REFERENCE.md, "Customization")."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import git, git_init, work_tree_files, write_tree
from ksgitops.app import usecases as app
from ksgitops.core.pipeline import reconcile
from ksgitops.core.readout.explain import explain_wec
from ksgitops.io.fs.tree import WorkTreeSnapshot

MAILBOX = "imw-mb-zaragoza"
ZARAGOZA = """\
apiVersion: edge.kubestellar.io/v2alpha1
kind: SyncTarget
metadata: {name: zaragoza, labels: {id: zaragoza}}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata:
  name: zaragoza
  labels: {region: eu, loc-name: zaragoza}
  annotations: {replicas: "3", banner: welcome}
spec: {instanceSelector: {matchLabels: {id: zaragoza}}}
"""


def location(name: str, labels: str, annotations: str = "{}") -> str:
    return f"""\
apiVersion: edge.kubestellar.io/v2alpha1
kind: Location
metadata: {{name: {name}, labels: {labels}, annotations: {annotations}}}
spec: {{instanceSelector: {{matchLabels: {{id: zaragoza}}}}}}
"""


def placement(name: str, selector: str, resources: str, namespace: str) -> str:
    return f"""\
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {{name: {name}}}
spec:
  locationSelectors: [{{matchLabels: {selector}}}]
  downsync: [{{apiGroup: "", resources: {resources}, namespaces: [{namespace}]}}]
"""


def configmap(name: str, namespace: str, text: str) -> str:
    return f"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: {namespace}
  annotations: {{edge.kubestellar.io/expand-parameters: "true"}}
data: {{text: "{text}"}}
"""


APP = """\
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: eu}
spec:
  locationSelectors: [{matchLabels: {region: eu}}]
  downsync:
  - {apiGroup: apps, resources: [deployments], namespaces: [app]}
  - {apiGroup: "", resources: [configmaps], namespaces: [app]}
---
apiVersion: edge.kubestellar.io/v2alpha1
kind: Customizer
metadata:
  name: scale
  namespace: app
  annotations: {edge.kubestellar.io/expand-parameters: "true"}
replacements:
- {path: "$.spec.replicas", value: "%(replicas)"}
- {path: "$.metadata.labels.region", value: '"%(region)"'}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: app
  annotations: {edge.kubestellar.io/customizer: scale}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
""" + configmap("banner", "app", "%(banner) at %(loc-name)")

SOURCES = {"spaces/imw/zaragoza.yaml": ZARAGOZA, "spaces/wmw-app/app.yaml": APP}
FOREIGN = {  # a Location of another tier selecting zaragoza, earlier by name, and the WDS that uses it
    "spaces/imw/edge.yaml": location("aaa-edge", "{tier: edge, loc-name: edge-site}", "{banner: edge}"),
    "spaces/wmw-edge/edge.yaml": placement("edge", "{tier: edge}", "[configmaps]", "edge") + "---\n"
    + configmap("probe", "edge", "%(loc-name)"),
}


def mailbox_of(repo: Path, space: str) -> dict[str, bytes]:
    """The mailbox files that come from `space`'s objects (their Namespaces' folders)."""
    found = work_tree_files(repo / "spaces" / MAILBOX)
    return {p: data for p, data in found.items() if f"/{space}/" in p or p.endswith(f"/{space}.yaml")}


def explained(result: Any) -> dict[str, str | None]:
    return {o["object"]: o.get("parameterLocation") for o in explain_wec(result, MAILBOX)["objects"]}


def test_another_wds_and_its_location_leave_an_objects_parameters_alone(tree) -> None:
    repo: Path = tree(SOURCES)
    app.reconcile_worktree(repo)
    before = mailbox_of(repo, "app")
    assert b"welcome at zaragoza" in before["patches/core/configmaps/app/banner.json"]
    write_tree(repo, FOREIGN)
    outcome = app.reconcile_worktree(repo)
    assert [p for p in outcome.result.problems if p.is_error] == []
    assert mailbox_of(repo, "app") == before
    probe = json.loads((repo / "spaces" / MAILBOX / "patches/core/configmaps/edge/probe.json").read_text())
    assert probe[0]["value"] == "edge-site"
    assert explained(outcome.result) == {
        "Deployment.apps app/web": "zaragoza", "ConfigMap app/banner": "zaragoza",
        "ConfigMap edge/probe": "aaa-edge", "Namespace app": None, "Namespace edge": None}


def _patch_text(result: Any, rel: str) -> str:
    entry = result.mailboxes[MAILBOX].entries[rel]
    return json.loads(entry.patch)[0]["value"]


def test_two_locations_of_one_wds_first_by_name_among_the_objects_own(tree) -> None:
    """Placement `b-site` reaches zaragoza through Location `bbb` and places both ConfigMaps;
    `a-site` reaches it through `aaa` and places only `both`: `both` takes `aaa` (first by
    name of its two), `one` takes `bbb`, though `aaa` comes first in the WEC."""
    repo: Path = tree({
        "spaces/imw/zaragoza.yaml": ZARAGOZA.split("---\n")[0] + "---\n"
        + location("bbb", "{site: b, loc-name: bbb}") + "---\n" + location("aaa", "{site: a, loc-name: aaa}"),
        "spaces/wmw/p.yaml": placement("b-site", "{site: b}", "[configmaps]", "ns") + "---\n"
        + placement("a-site", "{site: a}", "[configmaps]", "ns").replace(
            'namespaces: [ns]', 'namespaces: [ns], objectNames: [both]'),
        "spaces/wmw/cms.yaml": configmap("both", "ns", "%(loc-name)") + "---\n" + configmap("one", "ns", "%(loc-name)"),
    })
    result = reconcile(WorkTreeSnapshot(repo))
    assert _patch_text(result, "core/configmaps/ns/both") == "aaa"
    assert _patch_text(result, "core/configmaps/ns/one") == "bbb"
    assert explained(result) == {"ConfigMap ns/both": "aaa", "ConfigMap ns/one": "bbb", "Namespace ns": None}


def test_one_placement_through_two_locations_takes_the_first_by_name(tree) -> None:
    repo: Path = tree({
        "spaces/imw/zaragoza.yaml": ZARAGOZA.split("---\n")[0] + "---\n"
        + location("mmm", "{site: x, loc-name: mmm}") + "---\n" + location("ccc", "{site: x, loc-name: ccc}"),
        "spaces/wmw/p.yaml": placement("p", "{site: x}", "[configmaps]", "ns"),
        "spaces/wmw/cms.yaml": configmap("cm", "ns", "%(loc-name)"),
    })
    result = reconcile(WorkTreeSnapshot(repo))
    assert _patch_text(result, "core/configmaps/ns/cm") == "ccc"
    assert explained(result)["ConfigMap ns/cm"] == "ccc"
    # explain's placement line named only the first; it names every Location the WEC is reached through
    (line,) = explain_wec(result, MAILBOX)["placements"]
    assert (line["location"], line["locations"]) == ("ccc", ["ccc", "mmm"])


def test_an_incremental_run_after_the_foreign_location_equals_a_clean_run(tree, tmp_path: Path, cli) -> None:
    """The work tree's record and the cache's mailbox digests see the new Location: warm runs, in
    the work tree and with --commit, write what cold ones do."""
    repo = git_init(tree(SOURCES))
    assert cli("reconcile", str(repo)).code == 0
    assert cli("reconcile", str(repo), "--commit").code == 0
    write_tree(repo, FOREIGN)
    git(repo, "add", "spaces/imw", "spaces/wmw-edge")
    git(repo, "commit", "-qm", "a foreign Location")
    assert cli("reconcile", str(repo)).code == 0
    warm_files = work_tree_files(repo)
    assert cli("reconcile", str(repo), "--commit").code == 0
    warm_tree = git(repo, "rev-parse", "HEAD^{tree}")
    cold = tmp_path / "cold"
    shutil.copytree(repo, cold, ignore=shutil.ignore_patterns("ksgitops-state"))
    git(cold, "reset", "-q", "--hard", "HEAD~1")
    assert cli("reconcile", str(cold), "--commit").code == 0
    assert git(cold, "rev-parse", "HEAD^{tree}") == warm_tree
    fresh = write_tree(tmp_path / "fresh", {**SOURCES, **FOREIGN})
    assert cli("reconcile", str(fresh)).code == 0
    assert work_tree_files(fresh) == warm_files
