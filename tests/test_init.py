"""`ksgitops init DIR`: a starter repository from the bundled example, reconciled, with a truthful
STATUS.md (no WEC has reported: the example's made-up reports only with --demo-reports), made a
git repository whose first commit is the starter unless DIR lies in a git work tree already."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli_run import MAILBOXES, one_line_error, reconcile, run
from conftest import git, run_cli_subprocess


def reports_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("reported"))


def test_init_scaffolds_a_repo_that_validates_and_reconciles(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "new-repo"
    res = run(cli, "init", str(target))
    assert str(target) in res.out
    for rel in ("spaces/imw1/florin.yaml", "spaces/imw1/guilder.yaml", "spaces/wmw-c/edge-placement-c.yaml",
                "spaces/wmw-s/edge-placement-s.yaml"):
        assert (target / rel).is_file(), rel
    assert not list(target.rglob("__init__.py"))
    assert "valid: 2 WECs" in run(cli, "validate", str(target)).out
    reconcile(cli, target)
    for mailbox in MAILBOXES:
        assert (target / mailbox / "kustomization.yaml").is_file()


def test_init_real_entry_point_into_an_existing_empty_dir(tmp_path: Path) -> None:
    """An existing but empty DIR is accepted (only a non-empty one is refused)."""
    target = tmp_path / "empty"
    target.mkdir()
    proc = run_cli_subprocess("init", str(target))
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 0, proc
    assert (target / "spaces/imw1/florin.yaml").is_file()


def test_init_failure_is_never_a_traceback(tmp_path: Path) -> None:
    """Whatever init's outcome in this install, stderr holds at most one line and no traceback."""
    proc = run_cli_subprocess("init", str(tmp_path / "fresh"))
    assert "Traceback" not in proc.stderr
    if proc.returncode == 0:
        assert (tmp_path / "fresh/spaces").is_dir()
    else:
        one_line_error(proc.stderr)


def test_init_refuses_a_folder_holding_ksgitops_content_and_a_file(cli: Any, tmp_path: Path) -> None:
    for names, said in ((("spaces/",), "holds spaces/ already: a ksgitops repository"),
                        (("ksgitops.yaml", "README.md"), "holds ksgitops.yaml already: a ksgitops repository"),
                        (("STATUS.md",), "holds a STATUS.md, which init would overwrite")):
        target = tmp_path / names[0].strip("/").replace(".", "-")
        target.mkdir()
        for name in names:
            if name.endswith("/"):
                (target / name).mkdir()
            else:
                (target / name).write_text("mine\n")
        line = one_line_error(run(cli, "init", str(target), code=2).err)
        assert line.startswith(f"ksgitops: {target}: {said}"), line
        assert "ksgitops init fleet" in line and "move" in line  # what to do instead
        assert sorted(p.name for p in target.iterdir()) == sorted(n.strip("/") for n in names)  # nothing written
    afile = tmp_path / "afile"
    afile.write_text("x\n")
    assert "is not a folder" in one_line_error(run(cli, "init", str(afile), code=2).err)


def test_init_dot_right_after_git_init_writes_the_starter_and_leaves_the_commit_to_the_user(
        cli: Any, tmp_path: Path, monkeypatch: Any) -> None:
    target = tmp_path / "fleet"
    target.mkdir()
    git(target, "init", "-q", "-b", "main")
    monkeypatch.chdir(target)
    res = run(cli, "init", ".")
    assert ". is a git repository already: nothing committed; commit the starter (`git add -A && git commit`)" \
        in res.out, res.out
    assert res.out.splitlines()[-1] == "next: ksgitops wecs"
    assert "written beside" not in res.out  # nothing was there but .git
    assert (target / "spaces/imw1/florin.yaml").is_file() and (target / "STATUS.md").is_file()
    assert git(target, "status", "--porcelain").splitlines() == ["?? STATUS.md", "?? spaces/"]
    refused = one_line_error(run(cli, "init", "--git", ".", code=2).err)  # a second init: ksgitops content now
    assert "holds spaces/, STATUS.md already" in refused, refused


def test_init_dot_in_a_new_github_repository_keeps_its_files_and_names_them(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "clone"
    (target / ".github/workflows").mkdir(parents=True)
    files = {"README.md": "# fleet\n", "LICENSE": "Apache-2.0\n", ".gitignore": "*.pyc\n",
             ".github/workflows/ci.yml": "on: push\n"}
    for name, text in files.items():
        (target / name).write_text(text)
    git(target, "init", "-q", "-b", "main")
    git(target, "add", "-A")
    git(target, "-c", "user.name=u", "-c", "user.email=u@example.com", "commit", "-q", "-m", "Initial commit")
    refused = one_line_error(run(cli, "init", "--git", str(target), code=2).err)
    assert "is a git repository already; --git would make a new one" in refused, refused
    assert not (target / "spaces").exists()
    res = run(cli, "init", str(target))
    assert (f"{target}: spaces/ and STATUS.md written beside what was there, which init left as it was: "
            ".github/, .gitignore, LICENSE, README.md") in res.out, res.out
    assert {name: (target / name).read_text() for name in files} == files
    assert git(target, "log", "--format=%s").splitlines() == ["Initial commit"]
    assert "valid: 2 WECs" in run(cli, "validate", str(target)).out


def test_init_beside_files_in_a_folder_of_no_repository_makes_it_one(cli: Any, tmp_path: Path) -> None:
    """The new repository's first commit is the starter alone: what the folder held is the user's
    (a .env with a token, say), never committed unasked."""
    target = tmp_path / "notes"
    target.mkdir()
    (target / "keep.txt").write_text("mine\n")
    (target / ".env").write_text("TOKEN=s3cret\n")
    res = run(cli, "init", str(target))
    assert "which init left as it was: .env, keep.txt" in res.out and "a new git repository" in res.out, res.out
    assert "what was there is not committed: add what you want yourself" in res.out, res.out
    assert (target / "keep.txt").read_text() == "mine\n"
    committed = git(target, "ls-files").splitlines()
    assert "STATUS.md" in committed and "spaces/imw1/florin.yaml" in committed
    assert ".env" not in committed and "keep.txt" not in committed
    assert sorted(git(target, "status", "--porcelain").splitlines()) == ["?? .env", "?? keep.txt"]


def test_init_makes_a_git_repository_whose_first_commit_is_the_starter(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "fleet"
    res = run(cli, "init", str(target))
    assert "a new git repository, the starter its first commit" in res.out, res.out
    assert git(target, "log", "--format=%s").splitlines() == ["ksgitops init: a starter repository from the bundled example"]
    assert git(target, "status", "--porcelain") == ""  # everything committed, the index agrees
    assert "no commit (unchanged)" in run(cli, "reconcile", "--commit", str(target)).out
    assert "no commit (unchanged)" in run(cli, "status", "--commit", str(target)).out
    assert run(cli, "diff", str(target)).out.splitlines()[-1] == "0 WECs affected"


def test_init_ships_no_made_up_reports_and_status_md_says_none_came(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "fleet"
    res = run(cli, "init", str(target))
    assert "no WEC has reported yet: 0/6 healthy" in res.out, res.out
    assert reports_in(target) == []
    markdown = (target / "STATUS.md").read_text()
    assert "**0/6 healthy**" in markdown and "| florin | imw1-mb-florin | Unknown | never |" in markdown
    assert "placed, but not reported by the WEC" in markdown
    assert run(cli, "status", str(target)).out.endswith("0/6 healthy, 6 Missing; 0 status files changed\n")


def test_init_demo_reports_are_the_examples_and_said_to_be_made_up(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "demo"
    res = run(cli, "init", "--demo-reports", str(target))
    assert "demonstration reports" in res.out and "made up: no cluster sent them" in res.out, res.out
    assert reports_in(target) == ["spaces/imw1-mb-florin/reported", "spaces/imw1-mb-guilder/reported"]
    assert "**4/6 healthy**" in (target / "STATUS.md").read_text()
    assert git(target, "status", "--porcelain") == ""


def test_init_inside_a_work_tree_makes_no_repository_unless_asked(cli: Any, tmp_path: Path) -> None:
    outer = tmp_path / "mono"
    outer.mkdir()
    git(outer, "init", "-q", "-b", "main")
    res = run(cli, "init", str(outer / "fleet"))
    assert f"lies in the git work tree {outer}: nothing committed" in res.out, res.out
    assert not (outer / "fleet/.git").exists()
    refused = run(cli, "reconcile", "--commit", str(outer / "fleet"), code=2)  # its commits hold no spaces/ at the top
    assert "lies below the top of the git work tree" in one_line_error(refused.err)
    res = run(cli, "init", "--git", str(outer / "own"))
    assert (outer / "own/.git").is_dir() and "first commit" in res.out
    assert "no commit (unchanged)" in run(cli, "reconcile", "--commit", str(outer / "own")).out


def test_init_no_git_and_what_commit_modes_then_say(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "plain"
    res = run(cli, "init", "--no-git", str(target))
    assert not (target / ".git").exists() and "not a git repository (--no-git)" in res.out, res.out
    line = one_line_error(run(cli, "reconcile", "--commit", str(target), code=2).err)
    assert "not a git repository" in line and "git init" in line


def test_init_commits_as_ksgitops_when_git_knows_no_identity(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    env = {k: v for k, v in env.items() if not k.startswith(("GIT_AUTHOR", "GIT_COMMITTER"))}
    proc = subprocess.run([sys.executable, "-m", "ksgitops", "init", str(tmp_path / "fleet")], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0 and "(by ksgitops <ksgitops@users.noreply.github.com>)" in proc.stdout, proc


def test_init_says_in_one_line_why_it_could_not_make_the_folder(tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "missing")
    done = run_cli_subprocess("init", str(link))
    assert done.returncode == 2, done
    assert one_line_error(done.stderr) == f"ksgitops: {link}: a symbolic link to {tmp_path / 'missing'}, which does not exist"
    assert not (tmp_path / "missing").exists()
    read_only = tmp_path / "ro"
    read_only.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(read_only)], capture_output=True).returncode:
        return  # no mount here (not root): the symbolic link was the real check
    try:
        (read_only / "fleet").mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(read_only)], check=True)
        done = run_cli_subprocess("init", str(read_only / "fleet"))
        assert done.returncode == 3, done
        line = one_line_error(done.stderr)
        assert line.startswith(f"ksgitops: {read_only / 'fleet'}: could not copy the example into it: "), line
        assert "Read-only file system" in line and "[(" not in line, line
    finally:
        subprocess.run(["umount", str(read_only)], check=True)


def test_init_in_a_bare_repository_or_a_git_directory_is_refused_writing_nothing(cli: Any, tmp_path: Path) -> None:
    """A bare repository (`git init --bare`, a server's copy) or a work tree's .git has no work
    tree: a starter there would be files among git's own that no commit can hold."""
    bare = tmp_path / "fleet.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q")
    before = {p: sorted(os.listdir(p)) for p in (bare, work / ".git")}
    for target, options in ((bare, ()), (bare, ("--git",)), (bare / "fleet", ("--no-git",)),
                            (work / ".git", ()), (work / ".git/fleet", ())):
        refused = one_line_error(run(cli, "init", *options, str(target), code=2).err)
        assert f"{target}: lies in the git directory " in refused and "git clone" in refused, refused
    assert {p: sorted(os.listdir(p)) for p in before} == before
