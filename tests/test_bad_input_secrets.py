"""Secret values never leak, end to end through the command line: not into `diff` output (text,
JSON, markdown; a changed Secret or a new one), nor into the message of a parameter error or of a
failing jsonPatch test op on a Secret.
"""
from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from bad_input_checks import assert_clean, edit, ks

OLD_SECRET, NEW_SECRET = "old-secret-value-1234", "new-secret-value-5678"


def secret_doc(value: str) -> str:
    encoded = base64.b64encode(value.encode()).decode()
    return (f"apiVersion: v1\nkind: Secret\nmetadata: {{name: creds, namespace: specialstuff}}\ntype: Opaque\n"
            f"data:\n  password: {encoded}\n")


def _secret_repo(example: Path) -> Path:
    edit(example, "spaces/wmw-s/edge-placement-s.yaml", "resources: [configmaps]", "resources: [configmaps, secrets]")
    (example / "spaces/wmw-s/secret.yaml").write_text(secret_doc(OLD_SECRET))
    return example


def _secrets() -> list[str]:
    return [s for v in (OLD_SECRET, NEW_SECRET) for s in (v, base64.b64encode(v.encode()).decode())]


@pytest.mark.parametrize("output", ["text", "json", "markdown"])
def test_diff_never_shows_secret_values(output: str, example: Path, cli) -> None:
    repo = _secret_repo(example)
    assert cli("reconcile", str(repo)).code == 0
    assert (repo / "spaces/imw1-mb-guilder/objects/core/secrets/specialstuff/creds.yaml").is_file()
    (repo / "spaces/wmw-s/secret.yaml").write_text(secret_doc(NEW_SECRET))
    result = ks("diff", repo, "-o", output)
    assert result.returncode == 1, result  # 1: changes
    assert_clean(result.stderr)
    for value in _secrets():
        assert value not in result.stdout and value not in result.stderr
    assert "creds" in result.stdout and "password" in result.stdout
    if output == "json":
        data = json.loads(result.stdout)
        assert data["changed"] is True and data["affectedWecs"] == ["guilder"]
        assert "password" in data["wecs"]["guilder"]["diff"]
    else:
        assert "guilder" in result.stdout


def test_diff_of_a_new_secret_hides_its_value(example: Path) -> None:
    repo = _secret_repo(example)
    result = ks("diff", repo)
    assert result.returncode == 1, result
    assert "creds" in result.stdout
    for value in _secrets():
        assert value not in result.stdout + result.stderr


def test_parameter_error_in_secret_does_not_print_its_value(example: Path) -> None:
    repo = _secret_repo(example)
    (repo / "spaces/wmw-s/secret.yaml").write_text(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: specialstuff\n  annotations:\n"
        "    edge.kubestellar.io/expand-parameters: 'true'\ntype: Opaque\n"
        f"stringData:\n  password: '{OLD_SECRET}%(oops'\n")
    for command in ("reconcile", "validate"):
        result = ks(command, repo)
        assert "spaces/wmw-s/secret.yaml:10:" in result.stderr, result  # the field that does not expand
        assert OLD_SECRET not in result.stdout + result.stderr


def test_failing_test_op_on_secret_does_not_print_its_value(example: Path) -> None:
    repo = _secret_repo(example)
    (repo / "spaces/wmw-s/secret.yaml").write_text(
        secret_doc(OLD_SECRET).replace("metadata: {name: creds, namespace: specialstuff}",
                                       "metadata:\n  name: creds\n  namespace: specialstuff\n  annotations:\n"
                                       "    edge.kubestellar.io/customizer: sc")
        + "---\napiVersion: edge.kubestellar.io/v2alpha1\nkind: Customizer\nmetadata: {name: sc, namespace: specialstuff}\n"
          "jsonPatch:\n- {op: test, path: /data/password, value: x}\n")
    result = ks("reconcile", repo)
    assert result.returncode == 0 and "jsonPatch[0]" in result.stderr, result
    for value in _secrets():
        assert value not in result.stdout + result.stderr
