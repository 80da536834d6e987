"""The GitHub Action (`action.yml`), executed for real: its `run:` steps under bash, as the runner does.

`run_action` plays the runner's part for a composite action: it reads action.yml, evaluates the
`${{ }}` expressions it uses (inputs with their defaults, github.*, steps.<id>.outputs.*), gives
every step its env, its own GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, GITHUB_EVENT_PATH (a
pull_request payload), GITHUB_REPOSITORY and GITHUB_API_URL pointing at `tests/github_api.py`, a
loopback stand-in for the GitHub REST API. It runs each script with `bash --noprofile --norc -eo
pipefail` in the workspace, stops at the first failing step, and evaluates the action's outputs.

What is not run: `uses:` steps (actions/setup-python; the test interpreter stands in for it). The
`pip install` step is run for real by one test (`test_install_step_...`) into a fresh venv; the
others skip it, because ksgitops is already installed (editable) in the interpreter whose bin/ is
first on PATH, so the run step executes this checkout's code either way."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT
from github_api import FakeGitHub

from ksgitops.io import github as gh


ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
TOKEN = "ghs_s3cr3tT0kenThatMustNeverBePrinted"
REPOSITORY = "octo/fleet"
PR = 7
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
DOTTED = re.compile(r"[A-Za-z_][\w-]*(\.[A-Za-z_][\w-]*)*")


@dataclass
class ActionRun:
    returncode: int
    outputs: dict[str, str]
    summary: str
    log: str
    steps_run: list[str] = field(default_factory=list)


def evaluate(text: str, context: dict[str, Any]) -> str:
    """Substitute `${{ a.b.c }}` as the runner would; anything beyond a property path fails the test
    (so a new kind of expression in action.yml needs this harness taught, not silently ignored)."""
    def one(match: re.Match[str]) -> str:
        expr = match.group(1)
        assert DOTTED.fullmatch(expr), f"the test harness does not evaluate {expr!r}"
        value: Any = context
        for part in expr.split("."):
            value = value.get(part, "") if isinstance(value, dict) else ""
        return "" if value is None else str(value)
    return EXPRESSION.sub(one, text)


def read_outputs(path: Path) -> dict[str, str]:
    """Parse a GITHUB_OUTPUT file: `name=value` lines and `name<<DELIMITER` blocks."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    outputs: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        name, _, value = line.partition("=")
        outputs[name] = value
        i += 1
    return outputs


def run_action(workspace: Path, *, api: FakeGitHub | None = None, event_name: str = "pull_request",
               install: bool = False, action_path: Path = ROOT, path_prefix: str = "",
               **inputs: str) -> ActionRun:
    """Run action.yml's steps like the runner; `inputs` use the action's names with _ for -."""
    given = {k.replace("_", "-"): v for k, v in inputs.items()}
    unknown = set(given) - set(ACTION["inputs"])
    assert not unknown, f"action.yml has no inputs {unknown}"
    tmp = workspace.parent / f"runner-{os.urandom(4).hex()}"
    (tmp / "home").mkdir(parents=True)
    event = tmp / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": PR,
                                 "pull_request": {"number": PR, "head": {"ref": "topic"}, "base": {"ref": "main"}},
                                 "repository": {"full_name": REPOSITORY}}), encoding="utf-8")
    github = {"token": TOKEN, "action_path": str(action_path), "workspace": str(workspace),
              "event_name": event_name, "event_path": str(event), "repository": REPOSITORY}
    context: dict[str, Any] = {"github": github, "steps": {}, "runner": {"temp": str(tmp)}}
    context["inputs"] = {name: given.get(name, evaluate(str(spec.get("default", "")), context))
                         for name, spec in ACTION["inputs"].items()}
    bin_dir = str(Path(sys.executable).parent)  # `python` and `ksgitops` of the test interpreter
    base_env = {
        "PATH": f"{path_prefix}{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp / "home"), "LANG": "C.UTF-8",
        "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(action_path), "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": REPOSITORY, "GITHUB_API_URL": api.url if api else "http://127.0.0.1:9",
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "1234", "RUNNER_TEMP": str(tmp),
        **{k: v for k, v in os.environ.items() if k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV", "PYENV"))}}
    summary, log, ran = "", "", []
    for n, step in enumerate(ACTION["runs"]["steps"]):
        if "uses" in step or (step.get("id") == "install" and not install):
            continue
        output_file, summary_file, script = tmp / f"output-{n}", tmp / f"summary-{n}", tmp / f"step-{n}.sh"
        output_file.touch()
        summary_file.touch()
        script.write_text(evaluate(step["run"], context), encoding="utf-8")
        env = {**base_env, "GITHUB_OUTPUT": str(output_file), "GITHUB_STEP_SUMMARY": str(summary_file),
               **{k: evaluate(str(v), context) for k, v in (step.get("env") or {}).items()}}
        assert step.get("shell") == "bash"
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env=env, capture_output=True, text=True, timeout=300)
        ran.append(step.get("id") or step.get("name", str(n)))
        log += proc.stdout + proc.stderr
        summary += summary_file.read_text(encoding="utf-8")
        if step.get("id"):
            context["steps"][step["id"]] = {"outputs": read_outputs(output_file)}
        if proc.returncode:  # the runner still records what the failing step wrote to GITHUB_OUTPUT
            assert TOKEN not in log
            return ActionRun(proc.returncode, action_outputs(context), summary, log, ran)
    assert TOKEN not in log, "the token was printed"
    return ActionRun(0, action_outputs(context), summary, log, ran)


def action_outputs(context: dict[str, Any]) -> dict[str, str]:
    """The action's outputs from its steps' outputs; empty when no step with an id wrote any."""
    if not any(step["outputs"] for step in context["steps"].values()):
        return {}
    return {name: evaluate(str(spec["value"]), context) for name, spec in ACTION["outputs"].items()}


@pytest.fixture
def api() -> Any:
    with FakeGitHub(TOKEN, REPOSITORY) as server:
        yield server


@pytest.fixture
def workspace(example_git: Path) -> Path:
    """The runner's workspace (GITHUB_WORKSPACE) holding the example repo at `example/`."""
    return example_git.parent


def marked(api: FakeGitHub) -> list[dict[str, Any]]:
    return [c for c in api.comments(PR) if c["body"].startswith(gh.MARKER)]


def change_source(repo: Path, text: str) -> None:
    page = repo / "spaces" / "wmw-c" / "httpd.yaml"
    page.write_text(page.read_text().replace("This is a common web site.", text, 1))


def cli_supports(*args: str) -> bool:
    *command, option = args
    proc = subprocess.run([sys.executable, "-m", "ksgitops", *command, "--help"], capture_output=True, text=True)
    return proc.returncode == 0 and option in proc.stdout
