"""StatusCollectors and Secrets in the status step: a collector's results in the CombinedStatus
(KubeStellar's identities for zero reports; none for a placement without collectors; a missing
collector is reconcile's warning only), and Secret data never in any status output, singletonStatus
included.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ksgitops.core.load.schemas import validate_document
from ksgitops.core.tree import walk
from ksgitops.model import Origin
from status_summaries import (COMMOND, FLORIN, GUILDER, SPECIALD, as_reports, compute, edit, report, rs, status_of,
                              summarize)

SECRET = "core/secrets/commonstuff/creds"
SECRET_VALUE = "czNjcjN0LXZhbHVl"  # base64 of s3cr3t-value


def all_output(out: Any) -> bytes:
    """Every byte summarize produced: status files and STATUS.md."""
    data = [out.markdown]
    for tree in out.generated.values():
        if isinstance(tree, dict):
            data += [content for _, content in walk(tree) if isinstance(content, bytes)]
    return b"\n".join(data)


SECRET_YAML = f"""---
apiVersion: v1
kind: Secret
metadata: {{name: creds, namespace: commonstuff}}
data: {{password: {SECRET_VALUE}}}
stringData: {{token: plain-s3cr3t}}
"""


COLLECTOR_YAML = """apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: available}
spec:
  combinedFields:
  - {name: wecs, type: COUNT}
  - {name: available, type: SUM, subject: returned.status.availableReplicas}
---
apiVersion: control.kubestellar.io/v1alpha1
kind: StatusCollector
metadata: {name: everything}
spec:
  select:
  - {name: wec, def: inventory.name}
  - {name: obj, def: obj}
  - {name: status, def: returned.status}
"""


def with_secret_and_collectors(example: Path) -> None:
    (example / "spaces/wmw-c/httpd.yaml").write_text((example / "spaces/wmw-c/httpd.yaml").read_text() + SECRET_YAML)
    (example / "spaces/wmw-c/collectors.yaml").write_text(COLLECTOR_YAML)
    edit(example, "spaces/wmw-c/edge-placement-c.yaml", "  wantSingletonReportedState: true",
         "  - apiGroup: \"\"\n    resources: [secrets]\n    namespaces: [commonstuff]\n"
         "  wantSingletonReportedState: true\n  statusCollectors: [available, everything]")


def test_status_collector_results(example: Path) -> None:
    with_secret_and_collectors(example)
    reports = as_reports({FLORIN: {COMMOND: rs(1)}, GUILDER: {COMMOND: rs(3)}})
    out = summarize(compute(example), reports, 20)
    commond = status_of(out, "wmw-c", COMMOND)
    assert validate_document("combinedstatus.json", commond, Origin("x"), "CombinedStatus") == []
    available, everything = commond["results"]
    assert available == {"name": "available", "columnNames": ["wecs", "available"], "rows": [
        {"columns": [{"type": "Number", "float": "2"}, {"type": "Number", "float": "4"}]}]}
    assert everything["columnNames"] == ["wec", "obj", "status"]
    assert [r["columns"][0] for r in everything["rows"]] == [{"type": "String", "string": "florin"},
                                                           {"type": "String", "string": "guilder"}]
    # the object as sent to each WEC: with its customization (florin's patch)
    sent = everything["rows"][0]["columns"][1]["object"]
    assert sent["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "env is prod"
    # zero reports: KubeStellar's identities
    none = status_of(summarize(compute(example), {}, 20), "wmw-c", COMMOND)["results"][0]
    assert none["rows"][0]["columns"][1] == {"type": "Number", "float": "0"}
    # objects of a placement without collectors have none
    assert "results" not in status_of(out, "wmw-s", SPECIALD)


def test_missing_collector_is_a_warning(example: Path) -> None:
    """Reconcile's warning (core/place/dangling.py), which status reports with the rest; status adds none."""
    edit(example, "spaces/wmw-c/edge-placement-c.yaml", "  wantSingletonReportedState: true",
         "  wantSingletonReportedState: true\n  statusCollectors: [nowhere]")
    result = compute(example)
    assert any("StatusCollector nowhere not found" in p.message and p.severity == "warning" for p in result.problems)
    out = summarize(result, {}, 20)
    assert not any("StatusCollector nowhere" in p.message for p in out.problems)
    assert "results" not in status_of(out, "wmw-c", COMMOND)


def test_secret_data_never_in_status_output(example: Path) -> None:
    with_secret_and_collectors(example)
    result = compute(example)
    assert ("wmw-c", SECRET) in summarize(result, {}, 20).combined
    leaky = report("v1", "Secret", "commonstuff", "creds", {"data": {"password": SECRET_VALUE}})
    for docs in ({}, {FLORIN: {SECRET: leaky}}, {FLORIN: {SECRET: leaky}, GUILDER: {SECRET: leaky}}):
        out = summarize(result, as_reports(docs), 20)
        data = all_output(out) + b"".join(out.combined.values())
        assert SECRET_VALUE.encode() not in data and b"plain-s3cr3t" not in data
        secret = out.status("wmw-c", SECRET)
        everything = secret["results"][1]
        assert all("data" not in row["columns"][1]["object"] for row in everything["rows"])
    # a single WEC executing the Secret: singletonStatus exists but never carries what was reported
    edit(example, "spaces/imw1/florin.yaml", "env: prod", "env: dev")
    out = summarize(compute(example), as_reports({GUILDER: {SECRET: leaky}}), 20)
    assert out.status("wmw-c", SECRET)["singletonStatus"] == {}
    assert SECRET_VALUE.encode() not in all_output(out)
