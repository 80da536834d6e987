"""`ksgitops collect`: the real `kubernetes` client reading WECs (loopback KubeServers, or real
clusters with KSGITOPS_TEST_KUBECONFIG, see tests/kube_fixtures.py) into the mailboxes' reported/
folders. The tests put the objects on the WECs through the API, as an agent would have, and wait
for the clusters' controllers to write the workloads' status (`Wec.settle`); a status of the test's
own is the widget's (a custom resource no controller of the cluster writes), set as its controller
would set it."""
from __future__ import annotations

import copy
import json
import time
from pathlib import Path

import orjson
import pytest
import yaml

from conftest import git_init, write_tree
from kube_fixtures import KubeNames, Wec, isolate, widget_status, widget_wds
from kubewire import WIRE_TOKEN
from ksgitops.app.agent import CONTEXT_ANNOTATION, Desired, desired_objects, report_document
from ksgitops.core.status.reported import dump_report
from ksgitops.io.fs.tree import WorkTreeSnapshot
from minimal_fleet import minimal_fleet

FLORIN, GUILDER = "imw1-mb-florin", "imw1-mb-guilder"


def mailbox_objects(repo: Path, mailbox: str) -> list[Desired]:
    files = WorkTreeSnapshot(repo).read_tree(f"spaces/{mailbox}")
    assert files is not None, f"no mailbox {mailbox}"
    return desired_objects(files)


def reports(repo: Path, mailbox: str) -> dict[str, dict]:
    """{rel: document} of the mailbox's reported/ folder."""
    folder = repo / "spaces" / mailbox / "reported"
    return {str(p.relative_to(folder))[: -len(".yaml")]: yaml.safe_load(p.read_text())
            for p in sorted(folder.rglob("*.yaml"))} if folder.is_dir() else {}


def report_bytes(repo: Path, mailbox: str) -> dict[str, bytes]:
    folder = repo / "spaces" / mailbox / "reported"
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def seed(wec: Wec, objects: list[Desired], skip: tuple[str, ...] = ()) -> None:
    """Put the mailbox's objects on the WEC as an agent would have (Namespaces, then CRDs until
    they are served, then the rest), the widget healthy as its controller would make it, and wait
    for the cluster's controllers to write the workloads' status."""
    with wec.api() as api:
        for d in sorted(objects, key=lambda d: (d.phase, d.rel)):
            if d.rel in skip:
                continue
            if d.kind == "CustomResourceDefinition":
                api.crd(copy.deepcopy(d.body))
                continue
            api.apply(copy.deepcopy(d.body), d.resource)
            if d.kind == "Widget":
                api.set_status(d.api_version, d.resource, d.namespace, d.name, widget_status(1))
    wec.settle()


def set_status(wec: Wec, d: Desired, status: dict) -> None:
    """Only for a custom resource: a workload's status is its controller's."""
    assert d.kind == "Widget", d
    with wec.api() as api:
        api.set_status(d.api_version, d.resource, d.namespace, d.name, status)


def widget(objects: list[Desired]) -> Desired:
    return next(d for d in objects if d.kind == "Widget")


def live(wec: Wec, d: Desired) -> dict | None:
    with wec.api() as api:
        return api.get(d.api_version, d.resource, d.namespace, d.name)


@pytest.fixture
def fleet(example: Path, cli, kube_names: KubeNames) -> Path:
    """The example (its namespaces the test's own) with a widget on every WEC, reconciled and
    committed: mailboxes imw1-mb-florin and imw1-mb-guilder."""
    repo = git_init(write_tree(isolate(example, kube_names), widget_wds(kube_names)))
    result = cli("reconcile", str(repo), "--commit")
    assert result.code == 0, result
    assert {FLORIN, GUILDER} <= {p.name for p in (repo / "spaces").iterdir()}
    return repo


def collect(cli, repo: Path, kubeconfig: Path, *extra: str):
    return cli("collect", str(repo), "--kubeconfig", str(kubeconfig), *extra)


def test_collect_writes_the_servers_status_for_every_object_present(fleet: Path, cli, kube_wecs) -> None:
    wecs = kube_wecs(["florin", "guilder"])
    florin, guilder = mailbox_objects(fleet, FLORIN), mailbox_objects(fleet, GUILDER)
    absent = next(d.rel for d in guilder if d.kind == "ConfigMap")
    seed(wecs["florin"], florin)
    seed(wecs["guilder"], guilder, skip=(absent,))
    gizmo, spinning = widget(florin), widget_status(1, "False", "Waiting")
    set_status(wecs["florin"], gizmo, spinning)

    result = collect(cli, fleet, wecs.kubeconfig, "-o", "json")
    assert result.code == 0, result
    out = json.loads(result.out)
    assert out["collected"] == ["florin", "guilder"] and out["unreachable"] == {} and out["skipped"] == {}
    assert sorted(out["changed"]) == [FLORIN, GUILDER]

    for mailbox, objects, wec, missing in ((FLORIN, florin, wecs["florin"], set()),
                                           (GUILDER, guilder, wecs["guilder"], {absent})):
        found = reports(fleet, mailbox)
        expected = {d.rel for d in objects} - missing
        assert set(found) == expected  # an object absent on the WEC gets no report
        for d in objects:
            if d.rel not in expected:
                continue
            doc = found[d.rel]
            current = live(wec, d)
            identity = {"apiVersion": d.api_version, "kind": d.kind, "name": d.name,
                        "generation": current["metadata"]["generation"],
                        **({"namespace": d.namespace} if d.namespace else {})}
            assert doc["object"] == identity
            assert doc.get("status") == current.get("status")
            assert isinstance(doc["reportedAt"], str) and doc["reportedAt"].endswith("Z")
    assert reports(fleet, FLORIN)[gizmo.rel]["status"] == spinning
    rs = next(d for d in florin if d.kind == "ReplicaSet")  # its controller's status, as it wrote it
    assert reports(fleet, FLORIN)[rs.rel]["status"]["observedGeneration"] == 1
    # written as ksgitops' transports write reports: JSON (which is YAML), what status reads fastest
    for data in report_bytes(fleet, FLORIN).values():
        assert data == dump_report(orjson.loads(data))


def test_a_second_collect_of_unchanged_state_rewrites_nothing(fleet: Path, cli, kube_wecs) -> None:
    wecs = kube_wecs(["florin", "guilder"])
    florin = mailbox_objects(fleet, FLORIN)
    seed(wecs["florin"], florin)
    seed(wecs["guilder"], mailbox_objects(fleet, GUILDER))
    assert collect(cli, fleet, wecs.kubeconfig).code == 0
    before = report_bytes(fleet, FLORIN)
    stamps = {p: p.stat().st_mtime_ns for p in (fleet / "spaces" / FLORIN / "reported").rglob("*.yaml")}
    time.sleep(1.1)  # a rewrite would carry another reportedAt second

    result = collect(cli, fleet, wecs.kubeconfig, "-o", "json")
    assert result.code == 0, result
    assert json.loads(result.out)["changed"] == []
    assert report_bytes(fleet, FLORIN) == before
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps

    # one status changes: only that report is rewritten, with a newer reportedAt
    gizmo = widget(florin)
    set_status(wecs["florin"], gizmo, widget_status(1, "False", "Waiting"))
    result = collect(cli, fleet, wecs.kubeconfig, "-o", "json")
    assert json.loads(result.out)["changed"] == [FLORIN]
    after = report_bytes(fleet, FLORIN)
    changed = {name for name in after if after[name] != before.get(name)}
    assert changed == {f"{gizmo.rel}.yaml"}
    assert reports(fleet, FLORIN)[gizmo.rel]["reportedAt"] > yaml.safe_load(before[f"{gizmo.rel}.yaml"])["reportedAt"]


def test_stale_reports_go_when_the_object_leaves_the_mailbox_or_the_wec(fleet: Path, cli, kube_wecs) -> None:
    wecs = kube_wecs(["florin", "guilder"])
    florin = mailbox_objects(fleet, FLORIN)
    seed(wecs["florin"], florin)
    cm = next(d for d in florin if d.kind == "ConfigMap")
    stale = f"core/configmaps/{cm.namespace}/not-sent-any-more"
    write_tree(fleet / "spaces" / FLORIN / "reported", {
        f"{stale}.yaml": yaml.safe_dump({"object": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": cm.namespace,
                                                    "name": "not-sent-any-more"}, "reportedAt": "2020-01-01T00:00:00Z"}),
        f"core/configmaps/{cm.namespace}/httpd-htdocs.yml": "object: {}\n",  # not a name collect writes
    })
    assert collect(cli, fleet, wecs.kubeconfig).code == 0
    assert set(reports(fleet, FLORIN)) == {d.rel for d in florin}
    assert not (fleet / "spaces" / FLORIN / "reported" / f"core/configmaps/{cm.namespace}/httpd-htdocs.yml").exists()

    with wecs["florin"].api() as api:
        assert api.delete(cm.api_version, cm.resource, cm.namespace, cm.name)
    assert collect(cli, fleet, wecs.kubeconfig).code == 0
    assert set(reports(fleet, FLORIN)) == {d.rel for d in florin} - {cm.rel}


def test_an_unreachable_wec_is_one_line_exit_3_and_the_others_are_collected(fleet: Path, cli, kube_wecs) -> None:
    wecs = kube_wecs(["florin", "guilder"])
    seed(wecs["florin"], mailbox_objects(fleet, FLORIN))
    wecs["guilder"].wire.unreachable = True

    result = collect(cli, fleet, wecs.kubeconfig, "--timeout", "3")
    assert result.code == 3, result
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("guilder: unreachable: "), result.err
    assert "Traceback" not in result.err and WIRE_TOKEN not in result.err + result.out
    assert set(reports(fleet, FLORIN)) == {d.rel for d in mailbox_objects(fleet, FLORIN)}
    assert reports(fleet, GUILDER) == {}


def test_a_slow_wec_times_out_without_holding_up_the_others(fleet: Path, cli, kube_wecs) -> None:
    wecs = kube_wecs(["florin", "guilder"])
    seed(wecs["florin"], mailbox_objects(fleet, FLORIN))
    wecs["guilder"].wire.delay = 5.0
    started = time.monotonic()
    result = collect(cli, fleet, wecs.kubeconfig, "--timeout", "0.5", "-o", "json")
    assert time.monotonic() - started < 4
    assert result.code == 3, result
    out = json.loads(result.out)
    assert out["collected"] == ["florin"] and "timed out" in out["unreachable"]["guilder"]


def test_a_wec_without_a_kubeconfig_context_is_skipped_and_counted(fleet: Path, cli, kube_wecs) -> None:
    wecs = kube_wecs(["florin", "elsewhere"])
    seed(wecs["florin"], mailbox_objects(fleet, FLORIN))
    result = collect(cli, fleet, wecs.kubeconfig, "-o", "json")
    assert result.code == 0, result
    out = json.loads(result.out)
    assert out["collected"] == ["florin"] and list(out["skipped"]) == ["guilder"]
    assert "guilder" not in result.err
    assert collect(cli, fleet, wecs.kubeconfig).out.strip().endswith("1 skipped (no kubeconfig context or mailbox)")


def test_the_synctarget_annotation_names_the_context(fleet: Path, cli, kube_wecs) -> None:
    inventory = fleet / "spaces" / "imw1" / "florin.yaml"
    docs = list(yaml.safe_load_all(inventory.read_text()))
    docs[0]["metadata"]["annotations"] = {CONTEXT_ANNOTATION: "prod-eu-1"}
    inventory.write_text(yaml.safe_dump_all(docs))
    assert cli("reconcile", str(fleet)).code == 0
    wecs = kube_wecs(["prod-eu-1", "florin"])  # a context named florin exists too: the annotation wins
    seed(wecs["prod-eu-1"], mailbox_objects(fleet, FLORIN))
    result = collect(cli, fleet, wecs.kubeconfig, "-o", "json")
    assert result.code == 0, result
    assert json.loads(result.out)["collected"] == ["florin"]
    assert set(reports(fleet, FLORIN)) == {d.rel for d in mailbox_objects(fleet, FLORIN)}
    assert wecs["florin"].wire.requests == []  # the WEC of the context named like the SyncTarget is not read


def secret_wds(names: KubeNames) -> dict[str, str]:
    return {path: text.replace("secretstuff", names.ns("secretstuff")) for path, text in _SECRET_WDS.items()}


_SECRET_WDS = {
    "spaces/wmw-t/placement.yaml": """
apiVersion: edge.kubestellar.io/v2alpha1
kind: EdgePlacement
metadata: {name: edge-placement-t}
spec:
  locationSelectors: [{matchLabels: {env: prod}}]
  downsync:
  - apiGroup: ""
    resources: [secrets]
    namespaces: [secretstuff]
""",
    "spaces/wmw-t/secret.yaml": """
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: secretstuff}
type: Opaque
data: {password: c3VwZXJzZWNyZXQtdmFsdWU=}
""",
}


def test_a_secrets_report_carries_no_data(example: Path, cli, kube_wecs, kube_names: KubeNames) -> None:
    repo = write_tree(isolate(example, kube_names), secret_wds(kube_names))
    assert cli("reconcile", str(repo)).code == 0
    wecs = kube_wecs(["florin", "guilder"])
    objects = mailbox_objects(repo, FLORIN)
    secret = next(d for d in objects if d.kind == "Secret")
    seed(wecs["florin"], objects)
    assert live(wecs["florin"], secret)["data"] == secret.body["data"]  # it is there, data and all
    result = collect(cli, repo, wecs.kubeconfig)
    assert result.code == 0, result
    doc = reports(repo, FLORIN)[secret.rel]
    assert doc["object"]["kind"] == "Secret" and "status" not in doc
    text = (repo / "spaces" / FLORIN / "reported" / f"{secret.rel}.yaml").read_text()
    for leak in ("c3VwZXJzZWNyZXQtdmFsdWU=", "supersecret", "password"):
        assert leak not in text and leak not in result.out + result.err


def test_a_secrets_status_is_never_reported_whatever_the_server_returns() -> None:
    """No real API server gives a Secret a status (its schema has none), but a report never
    carries one even if a server, an aggregated API or a proxy did."""
    secret = Desired("core/secrets/ns/creds", {"apiVersion": "v1", "kind": "Secret",
                                                "metadata": {"name": "creds", "namespace": "ns"}})
    returned = {**secret.body, "data": {"password": "c2VjcmV0"}, "status": {"echo": "c2VjcmV0"}}
    assert report_document(secret, returned) == {"object": {"apiVersion": "v1", "kind": "Secret", "name": "creds",
                                                            "namespace": "ns"}}
    config_map = Desired("core/configmaps/ns/cm", {"apiVersion": "v1", "kind": "ConfigMap"})
    assert report_document(config_map, {"status": {"echo": "x"}})["status"] == {"echo": "x"}


def test_status_reflects_the_collected_health(fleet: Path, cli, kube_wecs) -> None:
    before = json.loads(cli("status", str(fleet), "-o", "json").out)
    assert before["health"].get("Missing", 0) == sum(before["health"].values()) > 0  # nothing reported yet
    wecs = kube_wecs(["florin", "guilder"])
    seed(wecs["florin"], mailbox_objects(fleet, FLORIN))
    seed(wecs["guilder"], mailbox_objects(fleet, GUILDER))
    assert collect(cli, fleet, wecs.kubeconfig).code == 0
    after = json.loads(cli("status", str(fleet), "-o", "json").out)
    assert after["health"] == {"Healthy": sum(before["health"].values())}, after

    set_status(wecs["guilder"], widget(mailbox_objects(fleet, GUILDER)), widget_status(1, "False", "Waiting"))
    assert collect(cli, fleet, wecs.kubeconfig).code == 0
    after = json.loads(cli("status", str(fleet), "-o", "json").out)
    assert after["health"].get("Progressing") == 1
    assert "guilder" in (fleet / "STATUS.md").read_text()


def test_an_unreadable_kubeconfig_is_one_line(fleet: Path, cli, tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: [\n")
    result = collect(cli, fleet, bad)
    assert result.code == 3 and "Traceback" not in result.err
    assert result.err.strip().count("\n") == 0 and "kubeconfig" in result.err


def test_collect_from_any_cluster(tree, cli, kube_wec: Wec, unique_ns: str) -> None:
    """collect reaching the API server itself (with a real cluster: its TLS and credentials)."""
    direct = kube_wec.direct()
    repo = tree(minimal_fleet(unique_ns, direct.context))
    assert cli("reconcile", str(repo)).code == 0
    from kubernetes import client
    with kube_wec.api_client() as api:
        client.CoreV1Api(api).create_namespaced_config_map(unique_ns, {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": unique_ns},
            "data": {"color": "blue"}})
    result = collect(cli, repo, direct.kubeconfig, "-o", "json")
    assert result.code == 0, result
    assert kube_wec.wire.requests == []  # not one request went through the wire
    found = reports(repo, "inv-mb-edge1")
    assert f"core/configmaps/{unique_ns}/settings" in found
    assert found[f"core/namespaces/_cluster/{unique_ns}"]["status"]["phase"] == "Active"


def test_a_mailbox_that_does_not_render_says_which_file_and_why(fleet: Path, cli, kube_wecs) -> None:
    """That WEC only is left out; the message locates the file and never quotes it."""
    wecs = kube_wecs(["florin", "guilder"])
    seed(wecs["florin"], mailbox_objects(fleet, FLORIN))
    broken = next((fleet / "spaces" / GUILDER / "objects").rglob("*.yaml"))
    broken.write_bytes(b"<<<<<<< HEAD\n" + broken.read_bytes() + b"=======\nsecret-ish: x\n>>>>>>> theirs\n")
    result = collect(cli, fleet, wecs.kubeconfig)
    rel = broken.relative_to(fleet / "spaces" / GUILDER).as_posix()
    assert f"guilder: spaces/{GUILDER}: cannot render the mailbox ({rel}:1: a merge left its conflict markers" \
        in result.err, result
    assert "secret-ish" not in result.err + result.out and "Traceback" not in result.err
    assert set(reports(fleet, FLORIN)) == {d.rel for d in mailbox_objects(fleet, FLORIN)}
