"""The README's "A repository of your own, from scratch": its YAML, written where its first lines
say, is a repository that validates without a warning, reconciles, and customizes per WEC as
the text says; the first-try mistakes it names are each one located warning or error, and
its shell block's commands run in order from the repository and from a folder below it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT, git, run_cli_subprocess

SECTION = "## A repository of your own, from scratch"


def section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    return text[start:text.index("\n## ", start + len(SECTION))]


def write_repository(folder: Path) -> list[str]:
    """The section's YAML blocks at the paths their first lines name; those paths."""
    written = []
    for block in re.findall(r"```yaml\n(.*?)```", section(), re.S):
        named = re.match(r"# (spaces/\S+\.yaml):", block)
        assert named is not None, block.splitlines()[0]
        (folder / named.group(1)).parent.mkdir(parents=True, exist_ok=True)
        (folder / named.group(1)).write_text(block)
        written.append(named.group(1))
    return written


def test_the_from_scratch_repository_works_as_the_readme_says(tmp_path: Path) -> None:
    assert write_repository(tmp_path) == ["spaces/inv/wecs.yaml", "spaces/apps/web.yaml"]
    git(tmp_path, "init", "-q")
    shell = re.search(r"```sh\n(.*?)```", section(), re.S)
    assert shell is not None
    steps = [line.split("#")[0].strip() for line in shell.group(1).splitlines()]
    assert [s.split()[1] for s in steps if s.startswith("ksgitops")] == \
        ["validate", "reconcile", "render", "explain", "status"]
    for step in (s for s in steps if s.startswith("ksgitops")):
        proc = run_cli_subprocess(*step.split()[1:], cwd=tmp_path / "spaces" / "apps")
        assert proc.returncode == 0 and proc.stderr == "", (step, proc)
        if step.startswith("ksgitops validate"):
            assert "0 errors, 0 warnings" in proc.stdout, proc.stdout
        if step.startswith("ksgitops render"):
            assert "value: us-east" in proc.stdout and "unset" not in proc.stdout, proc.stdout
        if step.startswith("ksgitops explain"):
            assert "placed: yes" in proc.stdout, proc.stdout
    west = (tmp_path / "spaces/inv-mb-west/patches/apps/deployments/web/nginx.json").read_text()
    assert "us-west" in west


@pytest.mark.parametrize(("old", "new", "at", "said"), [
    ("apiVersion: edge.kubestellar.io/v2alpha1  # v2alpha1", "apiVersion: edge.kubestellar.io/v1alpha1  #",
     "  downsync:", "warning: EdgePlacement web: spec.downsync: unknown field"),
    ("  locationSelectors:", "  locationSelector:", "  locationSelector:",
     "warning: EdgePlacement web: spec.locationSelector: unknown field (did you mean 'locationSelectors'?)"),
    ("{matchLabels: {id: west}}", "{matchLabels: {id: wset}}", "wset", "warning: Location west selects no SyncTarget"),
    ("  replicas: 1", "\treplicas: 1", "\treplicas", "malformed YAML"),
])
def test_the_first_try_mistakes_it_names_are_said_at_their_line(tmp_path: Path, old: str, new: str, at: str,
                                                                said: str) -> None:
    write_repository(tmp_path)
    for name in ("spaces/apps/web.yaml", "spaces/inv/wecs.yaml"):
        text = (tmp_path / name).read_text()
        if old in text:
            text = text.replace(old, new, 1)
            (tmp_path / name).write_text(text)
            line = next(i for i, t in enumerate(text.splitlines(), 1) if at in t)
            where = f"{name}:{line}: "
    proc = run_cli_subprocess("validate", cwd=tmp_path)
    assert where + said in proc.stderr and "Traceback" not in proc.stderr, proc


@pytest.mark.parametrize("args", [("reconcile", "--commit"), ("status", "--commit"), ("fold-in",)])
def test_a_commit_mode_before_the_first_commit_says_to_commit_first(tmp_path: Path, args: tuple[str, ...]) -> None:
    """Right after `git init` and the YAML, before `git commit`: the branch has no commit to read."""
    write_repository(tmp_path)
    git(tmp_path, "init", "-q", "-b", "main")
    proc = run_cli_subprocess(*args, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc
    assert proc.stderr.strip() == ("ksgitops: HEAD: the branch main has no commit yet, and this reads commits, not "
                                   "the work tree: commit the sources first (`git add -A && git commit`)"), proc
    assert not (tmp_path / "spaces/inv-mb-east").exists()
