"""Start-up is part of every command: the CLI loads the use cases (and the rooms behind them) only
when a command uses them (ksgitops/lazy.py)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLE


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["validate", "--help"]])
def test_help_and_version_do_not_load_the_use_cases(argv: list[str]) -> None:
    code = ("import sys\nfrom ksgitops.cli.commands import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            "print('RESULT', type(sys.modules['ksgitops.app.usecases']).__name__,"
            " 'ksgitops.io.fs.worktree' in sys.modules, file=sys.stderr)")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert err.splitlines()[-1] == "RESULT _LazyModule False"


def test_a_command_loads_the_use_cases_on_first_use(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "repo")
    code = ("import sys\nfrom ksgitops.cli.commands import main\n"
            f"try:\n    main(['validate', {str(tmp_path / 'repo')!r}])\nexcept SystemExit:\n    pass\n"
            "print('RESULT', type(sys.modules['ksgitops.app.usecases']).__name__, file=sys.stderr)")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert err.splitlines()[-1] == "RESULT module"


@pytest.mark.parametrize("argv", [["reconcile"], ["reconcile", "--commit"], ["diff"]])
def test_a_proven_run_answers_without_loading_the_pipeline(example_git: Path, argv: list[str]) -> None:
    """A run the record proves (after the same reconcile) loads neither the pipeline nor the rooms
    behind it: it answers from the record."""
    code = ("import sys\nfrom ksgitops.cli.commands import main\n"
            f"try:\n    main({[*argv, str(example_git)]!r})\nexcept SystemExit:\n    pass\n"
            "print('RESULT', *(type(sys.modules.get(m)).__name__ for m in"
            " ('ksgitops.core.pipeline', 'ksgitops.core.emit.mailbox', 'ksgitops.core.customize.patchdiff')), file=sys.stderr)")
    for _ in range(3):  # the third run's record is settled (no stamp from the tick it recorded in)
        subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", *argv[1:], str(example_git)], capture_output=True, check=True)
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False).stderr
    assert err.splitlines()[-1] == "RESULT _LazyModule NoneType NoneType", err


@pytest.mark.parametrize("argv", [["reconcile"], ["diff"]])
def test_a_proven_work_tree_run_opens_no_repository(example_git: Path, argv: list[str]) -> None:
    """pygit2 (~0.09 s of start-up) stays unloaded when the work-tree record proves the run: the
    git directory is found as libgit2 would (io/git/discover.py)."""
    code = ("import sys\nfrom ksgitops.cli.commands import main\n"
            f"try:\n    main({[*argv, str(example_git)]!r})\nexcept SystemExit:\n    pass\n"
            "print('RESULT', type(sys.modules.get('pygit2')).__name__, 'pygit2._pygit2' in sys.modules, file=sys.stderr)")
    for _ in range(3):
        subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", str(example_git)], capture_output=True, check=True)
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False).stderr
    assert err.splitlines()[-1] == "RESULT _LazyModule False", err


def test_a_work_tree_run_that_computes_opens_no_repository_either(example_git: Path) -> None:
    """A changed source's blob id is computed as git does (core/status/gitobjects.py), without
    pygit2: `diff` and `reconcile` of a work tree never load it."""
    subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", str(example_git)], capture_output=True, check=True)
    florin = example_git / "spaces" / "imw1" / "florin.yaml"
    florin.write_text(florin.read_text().replace("env: prod", "env: dev"))
    for argv in (["diff"], ["reconcile"]):
        code = ("import sys\nfrom ksgitops.cli.commands import main\n"
                f"try:\n    main({[*argv, str(example_git)]!r})\nexcept SystemExit:\n    pass\n"
                "print('RESULT', 'pygit2._pygit2' in sys.modules, file=sys.stderr)")
        err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False).stderr
        assert err.splitlines()[-1] == "RESULT False", err


@pytest.mark.parametrize("argv", [["reconcile"], ["reconcile", "--commit"], ["diff"]])
def test_a_proven_run_loads_no_yaml_and_unpacks_no_wec(example_git: Path, argv: list[str]) -> None:
    """A proven run prints how many WECs there are, and its problems: the record's WECs stay packed
    (core/results.py PackedWecs) and neither YAML nor the loader's room is imported."""
    code = ("import sys\nfrom ksgitops.cli.commands import main\nfrom ksgitops.core import results\n"
            "unpacked = []\nloaded = results.PackedWecs._loaded\n"
            "results.PackedWecs._loaded = lambda self: unpacked.append(len(self)) or loaded(self)\n"
            f"try:\n    main({[*argv, str(example_git)]!r})\nexcept SystemExit:\n    pass\n"
            "print('RESULT', 'yaml' in sys.modules, 'ksgitops.core.load.read' in sys.modules, unpacked, file=sys.stderr)")
    for _ in range(3):
        subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", *argv[1:], str(example_git)],
                       capture_output=True, check=True)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert ("0 WECs affected" if argv == ["diff"] else "2 WECs, 0 generated folders changed") in done.stdout
    assert done.stderr.splitlines()[-1] == "RESULT False False []", done.stderr


def test_packed_wecs_are_the_wecs() -> None:
    import pickle
    from ksgitops.core.place.where import Wec
    from ksgitops.core.results import PackedWecs
    from ksgitops.model import Obj, Origin
    wecs = {f"mb{i}": Wec(Obj("inv", {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "SyncTarget",
                                      "metadata": {"name": f"st{i}", "labels": {"i": str(i)}}}, Origin(f"st{i}.yaml")), ())
            for i in range(3)}
    packed = PackedWecs.of(wecs)
    again = pickle.loads(pickle.dumps(packed))
    assert len(again) == 3 and again._wecs is None
    assert again == wecs and dict(again) == wecs and wecs == again
    assert again["mb1"].sync_target.labels == {"i": "1"} and list(again) == ["mb0", "mb1", "mb2"]
    assert PackedWecs.of({"mb0": wecs["mb0"]}) != wecs


def test_a_bare_repository_s_run_does_not_load_the_work_tree_s_rooms(example_git: Path, tmp_path: Path) -> None:
    """`reconcile --commit` in a bare repository, which computes and commits, executes neither the
    work-tree writer and its stat record nor the checkout (io/fs, io/git/checkout.py)."""
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(example_git), str(bare)], check=True)
    rooms = ("ksgitops.io.fs.worktree", "ksgitops.io.fs.statcache", "ksgitops.io.fs.plan", "ksgitops.io.git.checkout")
    code = ("import sys\nfrom ksgitops.cli.commands import main\n"
            f"try:\n    main(['reconcile', '--commit', {str(bare)!r}])\nexcept SystemExit:\n    pass\n"
            f"print('RESULT', *(type(sys.modules.get(m)).__name__ for m in {rooms!r}), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "committed" in done.stdout, done.stdout + done.stderr
    loaded = dict(zip(rooms, done.stderr.splitlines()[-1].split()[1:]))
    assert all(kind in ("_LazyModule", "NoneType") for kind in loaded.values()), loaded


@pytest.mark.parametrize("name", ["ksgitops.io.fs.plan", "ksgitops.io.fs.statcache", "ksgitops.io.git.checkout"])
def test_a_room_loaded_on_first_use_is_an_attribute_of_its_package(name: str) -> None:
    """As an import makes it: `import a.b.c` then `a.b.c.f`, and a patch by dotted name."""
    parent, _, child = name.rpartition(".")
    code = (f"import ksgitops.app.usecases\nimport {name}\nimport {parent} as p\n"
            f"assert hasattr(p, {child!r}), 'import {name} leaves it off {parent}'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_monitor_preloads_what_a_proven_work_tree_run_executes(tmp_path: Path) -> None:
    """A worker forked from the monitor (cli/entry.py `preload`) executes no room of its own for a
    proven `reconcile`: what the use cases load on first use is loaded by the monitor."""
    repo = tmp_path / "fleet"
    shutil.copytree(EXAMPLE, repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([sys.executable, "-m", "ksgitops", "reconcile", str(repo)], capture_output=True, check=True)
    code = ("import sys\nfrom pathlib import Path\nfrom ksgitops.cli.entry import preload\npreload()\n"
            "executed = lambda: {n for n, m in sys.modules.items() if n.startswith('ksgitops') and "
            "type(m).__name__ != '_LazyModule'}\nbefore = executed()\nfrom ksgitops.app import usecases\n"
            f"out = usecases.reconcile_worktree(Path({str(repo)!r}))\n"
            "print(type(out).__name__, *sorted(executed() - before - {'ksgitops.io.fs.feed'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["ProvenOutcome"], done.stdout + done.stderr


def test_the_cel_library_loads_without_its_shell() -> None:
    """The CEL package's __init__ imports its interactive shell (prompt_toolkit, ~0.15 s): status
    loads only the native module, and a later `import cel` still works, with that same module."""
    code = ("import sys\nfrom ksgitops.core.status.celcompile import cel_library\nlib = cel_library()\n"
            "assert lib.compile('size(x) + 1').execute(lib.Context(variables={'x': [1, 2]})) == 3\n"
            "print('prompt_toolkit' in sys.modules, 'cel.cli' in sys.modules)\n"
            "import cel\nprint(cel.compile('1 + 1').execute(cel.Context(variables={})), sys.modules['cel.cel'] is lib)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False", "2", "True"]
