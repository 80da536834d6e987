"""A mailbox patch whose operation fails is located at that operation's line, wherever it is read
back: status (the row's warning), reconcile (a patch it keeps), render, diff and sync (the mailbox
refused). Patch files are JSON as ksgitops writes them (an operation over several lines) or as a
hand edit may leave them (one operation a line, or all on one); every finding was at line 1."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from isolation_cases import base_repo
from ksgitops.app.agent.desired import desired_objects
from ksgitops.core.emit.readback import Unreadable, patched, read_patch
from ksgitops.io.fs.tree import WorkTreeSnapshot

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
OPS = [{"op": "replace", "path": "/data/a", "value": "2"},
       {"op": "add", "path": "/data/b", "value": "3"},
       {"op": "remove", "path": "/data/nothere"},
       {"op": "add", "path": "/data/c", "value": "4"}]
LAYOUTS = {  # how the patch file is written -> the line of its third operation
    "as ksgitops writes it": (orjson.dumps(OPS, option=orjson.OPT_INDENT_2), 12),
    "one operation a line": (b"[\n" + b",\n".join(orjson.dumps(op) for op in OPS) + b"\n]\n", 4),
    "after blank lines, on one line": (b"\n\n" + orjson.dumps(OPS), 3),
}


def apply(data: bytes) -> Unreadable:
    with pytest.raises(Unreadable) as caught:
        patched("patches/x.json", {**CM, "data": dict(CM["data"])}, read_patch("patches/x.json", data), data)
    return caught.value


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_failing_operation_is_named_at_its_line(layout: str) -> None:
    data, line = LAYOUTS[layout]
    found = apply(data)
    assert (found.line, found.what) == (line, "operation 3 of 4 (remove) does not apply to the base copy")


def test_an_operation_jsonpatch_refuses_and_a_whole_object_replaced_are_at_their_lines() -> None:
    ops = OPS[:2] + [{"op": "nonsense", "path": "/data"}]
    found = apply(b"[\n" + b",\n".join(orjson.dumps(op) for op in ops) + b"\n]\n")
    assert (found.line, found.what) == (4, "operation 3 of 3 does not apply to the base copy")
    ops = [OPS[0], {"op": "replace", "path": "", "value": ["x"]}, {"op": "add", "path": "/-", "value": 1}]
    found = apply(b"[\n" + b",\n".join(orjson.dumps(op) for op in ops) + b"\n]\n")
    assert (found.line, found.what) == (3, "operation 2 of 3 (replace) replaces the whole object by something else")


def test_an_item_that_is_no_operation_is_at_its_line() -> None:
    with pytest.raises(Unreadable) as caught:
        read_patch("patches/x.json", b'[\n  {"op": "remove", "path": "/a"},\n  7\n]\n')
    assert (caught.value.line, caught.value.what) == (3, "not a JSON patch: item 2 is no operation")


def test_every_command_reading_the_patch_back_names_the_operations_line(tmp_path: Path, cli: Any) -> None:
    """A frozen space's patch is kept as it stands: reconcile warns of it, render and sync refuse
    the mailbox, each at the failing operation's line."""
    repo = base_repo(tmp_path / "repo")
    assert cli("reconcile", str(repo)).code == 0
    mailbox = "spaces/imw1-mb-guilder"
    rel = "patches/apps/replicasets/commonstuff/commond.json"
    ops = orjson.loads((repo / mailbox / rel).read_bytes())
    ops.append({"op": "remove", "path": "/spec/nothere"})
    data = orjson.dumps(ops, option=orjson.OPT_INDENT_2)
    (repo / mailbox / rel).write_bytes(data)
    line = data[: data.rindex(b"{")].count(b"\n") + 1  # the last operation's
    assert line > 1
    (repo / "spaces/wmw-c/broken.yaml").write_text("kind: [unclosed\n")  # wmw-c frozen: the patch is kept
    what = f"operation {len(ops)} of {len(ops)} (remove) does not apply to the base copy"
    result = cli("reconcile", str(repo))
    assert result.code == 2
    [warning] = [ln for ln in result.err.splitlines() if ln.startswith(f"{mailbox}/{rel}:{line}: warning: ")]
    assert what in warning, warning
    render = cli("render", "guilder", str(repo))
    assert render.code == 2 and f"{mailbox}/{rel}:{line}: {what}" in render.err, render
    with pytest.raises(Unreadable) as caught:  # what `ksgitops sync` renders
        desired_objects(WorkTreeSnapshot(repo).read_tree(mailbox))  # type: ignore[arg-type]
    assert (caught.value.path, caught.value.line, caught.value.what) == (rel, line, what)
