"""The Kubernetes tests against API servers they can reach only through the API, as real clusters:
KubeServers in processes of their own (`python tests/kubeserver --controllers`, stand-ins of a
cluster's controllers racing the tests as a real cluster's do), named by KSGITOPS_TEST_KUBECONFIG.
Nothing skips, and every test leaves the servers as it found them (once their namespace controller
has removed what the tests deleted).

The whole agent, collect and space set runs this way with
`python -m pytest tests/test_sync*.py tests/test_collect_cmd.py tests/test_spaceproviders*.py --kubeservers 2`
(.ci/run does); here a sample of each kind of test keeps that mode from rotting.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest

from conftest import ROOT
from kube_fixtures import ENV, start_kubeservers, stop_kubeservers
from kubeapi import CRDS, NAMESPACES, KubeApi

SAMPLE = [
    "tests/test_sync.py::test_first_cycle_creates_namespaces_first_then_applies_with_ssa",  # the wire's record
    "tests/test_sync.py::test_a_cycle_with_nothing_changed_writes_nothing",  # waits for the controllers
    "tests/test_sync_objects.py::"
    "test_namespaces_are_pruned_only_when_the_agent_created_them_and_they_hold_nothing_else",
    "tests/test_sync_objects.py::test_upsync_follows_the_syncerconfig",  # CRDs and custom resources made by the test
    "tests/test_sync.py::test_apply_and_prune_on_any_cluster",  # the agent straight to the server
    "tests/test_collect_cmd.py::test_an_unreachable_wec_is_one_line_exit_3_and_the_others_are_collected",
    "tests/test_collect_cmd.py::test_status_reflects_the_collected_health",  # statuses set by the test
    "tests/test_spaceproviders_kube.py::test_watch_across_spaces",  # watches through the wire
    "tests/test_kubecontrollers.py::test_a_deployment_gets_a_replicaset_and_a_status_from_its_controller",
]
SYSTEM_NAMESPACES = ["default", "kube-node-lease", "kube-public", "kube-system"]


def run_pytest(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_the_tests_pass_against_servers_reachable_only_through_the_api(tmp_path: Path) -> None:
    processes, paths = start_kubeservers(2, tmp_path)
    try:
        with KubeApi(paths[0], "kubeserver1") as api:
            before = int(api.request("GET", "/api/v1/namespaces")["metadata"]["resourceVersion"])
        # both forms of an entry: a file (its current context), a file and a context
        env = {**os.environ, ENV: f"{paths[0]},{paths[1]}#kubeserver2"}
        report = tmp_path / "report.xml"
        run = run_pytest(env, "-rs", f"--junitxml={report}", *SAMPLE)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        suite = ElementTree.parse(report).getroot().find("testsuite")
        assert suite is not None and {key: suite.get(key) for key in ("tests", "skipped", "failures", "errors")} == \
            {"tests": str(len(SAMPLE)), "skipped": "0", "failures": "0", "errors": "0"}, run.stdout[-2000:]
        for i, path in enumerate(paths):
            with KubeApi(path, f"kubeserver{i + 1}") as api:
                assert int(api.request("GET", "/api/v1/namespaces")["metadata"]["resourceVersion"]) > before
                assert tidy(api) == ([], [], [], [])  # the tests worked there, and tidied up
    finally:
        stop_kubeservers(processes)
    assert all(p.returncode == 0 for p in processes)  # SIGTERM: a clean stop


def tidy(api: KubeApi, timeout: float = 30.0) -> tuple[list[str], ...]:
    """What is left besides the system namespaces, once the namespace controller has removed the
    namespaces the tests deleted (namespaces, CRDs, ConfigMaps, ReplicaSets)."""
    deadline = time.monotonic() + timeout
    while True:
        names = [[o["metadata"]["name"] for o in api.list(*kind)]
                 for kind in (NAMESPACES, CRDS, ("v1", "configmaps"), ("apps/v1", "replicasets"))]
        left = ([n for n in names[0] if n not in SYSTEM_NAMESPACES], *names[1:])
        if not any(left) or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.mark.parametrize("value, message", [
    ("{missing}", "cannot read"),
    ("{config}#nope", "no context 'nope'"),
    ("{config},{config}#kubeserver1", "listed twice"),
])
def test_a_bad_kubeconfig_list_stops_the_run_before_any_test(tmp_path: Path, value: str, message: str) -> None:
    config = tmp_path / "one.kubeconfig"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: kubeserver1\nclusters: []\nusers: []\n"
                      "contexts: [{name: kubeserver1, context: {cluster: c, user: u}}]\n")
    env = {**os.environ, ENV: value.format(missing=tmp_path / "missing", config=config)}
    run = run_pytest(env, "--collect-only", "-q", "tests/test_kube_external.py")
    assert run.returncode == 4 and message in run.stderr and ENV in run.stderr, run.stderr[-2000:]
