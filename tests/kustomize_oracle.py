"""The kustomize oracle's helpers (tests/test_kustomize_oracle*.py): `kubectl kustomize` on a mailbox
against `ksgitops render` of its WEC, compared as sorted canonical JSON and then in order."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT


KUBECTL = shutil.which("kubectl")


def _load_fleet_module() -> Any:
    """benchmarks/ is not a package: import benchmarks/fleet.py by path."""
    path = ROOT / "benchmarks" / "fleet.py"
    spec = importlib.util.spec_from_file_location("ksgitops_bench_fleet", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kustomize(mailbox_dir: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize DIR` parsed into objects (the oracle)."""
    assert KUBECTL is not None
    proc = subprocess.run([KUBECTL, "kustomize", str(mailbox_dir)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"kubectl kustomize {mailbox_dir} failed:\n{proc.stderr}"
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc is not None]


def _drop_empty_annotations(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    if isinstance(md, dict) and "annotations" in md and not md["annotations"]:
        md = dict(md)
        del md["annotations"]
        obj = {**obj, "metadata": md}
    return obj


def canonical(objects: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for o in objects)


def render_json(cli: Any, wec: str, repo: Path) -> list[dict[str, Any]]:
    res = cli("render", wec, str(repo), "-o", "json")
    assert res.code == 0, res
    assert "Traceback" not in res.err, res.err
    doc = json.loads(res.out)
    assert (doc.get("apiVersion"), doc.get("kind")) == ("v1", "List"), res.out[:300]
    return doc["items"]


def mailboxes(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / "spaces").iterdir() if p.is_dir() and "-mb-" in p.name)


def reconcile(cli: Any, repo: Path) -> None:
    res = cli("reconcile", str(repo))
    assert res.code == 0, res
    assert "Traceback" not in res.err, res.err


def assert_oracle_agrees(cli: Any, repo: Path, mailbox: str, wec: str | None = None) -> list[dict[str, Any]]:
    """kustomize(mailbox) == render(wec) as sorted canonical JSON; returns the rendered objects."""
    expected = [_drop_empty_annotations(o) for o in kustomize(repo / "spaces" / mailbox)]
    got = render_json(cli, wec or mailbox, repo)
    assert expected, f"kustomize rendered nothing for {mailbox}: the comparison would be vacuous"
    exp, act = canonical(expected), canonical(got)
    if exp != act:
        only_k = [e for e in exp if e not in act]
        only_r = [a for a in act if a not in exp]
        pytest.fail(f"{mailbox}: kustomize and render differ\nonly in kustomize:\n  "
                    + "\n  ".join(only_k) + "\nonly in render:\n  " + "\n  ".join(only_r))
    # and in the same order: render prints what `kubectl apply -f -` can take as it comes
    assert [_identity(o) for o in got] == [_identity(o) for o in expected], f"{mailbox}: order differs"
    return got


def _identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    md = obj["metadata"]
    return obj["apiVersion"], obj["kind"], md.get("namespace", ""), md["name"]


def _count_files(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0
