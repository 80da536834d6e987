"""`diff` renders only the objects of a mailbox whose base copy or patch changed: what it shows is
what rendering every object on both sides and comparing them shows."""
from __future__ import annotations

import copy
import random
from typing import Any

import orjson
import pytest

from conftest import EXAMPLE
from ksgitops.core.emit import readback
from ksgitops.core.pipeline import reconcile
from ksgitops.core.readout import diff, render
from ksgitops.core.readout.render import redact_pair, render_mailbox
from ksgitops.core.tree import FileTree
from ksgitops.io.fs.tree import WorkTreeSnapshot


def _everything_rendered(old: FileTree | None, new: FileTree | None) -> list[tuple[str, Any, Any]]:
    before = dict(render_mailbox(old)) if old else {}
    after = dict(render_mailbox(new)) if new else {}
    pairs = [(rel, *redact_pair(before.get(rel), after.get(rel))) for rel in sorted(set(before) | set(after))]
    return [p for p in pairs if p[1] != p[2]]


def _mailboxes() -> list[FileTree]:
    result = reconcile(WorkTreeSnapshot(EXAMPLE))
    return [tree for root, tree in sorted(result.generated.items())
            if root.count("/") == 1 and isinstance(tree, dict) and isinstance(tree.get("objects"), dict)]


def _edit(tree: FileTree, rng: random.Random) -> FileTree:
    """A copy with some objects' base copies or patches changed, added or removed."""
    new = copy.deepcopy(tree)
    inputs = render.mailbox_inputs(new)
    for rel, data, patch in rng.sample(inputs, k=min(len(inputs), rng.randint(1, 3))):
        folder, _, name = f"objects/{rel}.yaml".rpartition("/")
        holder: Any = new
        for part in folder.split("/"):
            holder = holder[part]
        choice = rng.choice(["data", "patch", "drop", "same"])
        if choice == "data":
            holder[name] = data.replace(b"\n", b"\n", 1) + b"# edited\n"
        elif choice == "drop":
            del holder[name]
        elif choice == "patch":
            patches = new.setdefault("patches", {})
            for part in rel.split("/")[:-1]:
                patches = patches.setdefault(part, {})
            ops = orjson.loads(patch) if patch else []
            ops.append({"op": "add", "path": "/metadata/labels", "value": {"edited": "yes"}})
            patches[f"{rel.split('/')[-1]}.json"] = orjson.dumps(ops)
    return new


@pytest.mark.parametrize("seed", range(12))
def test_the_changes_are_those_of_rendering_everything(seed: int) -> None:
    rng = random.Random(seed)
    for old in _mailboxes():
        new = _edit(old, rng)
        shown = [(c.rel, c.old, c.new) for c in diff.mailbox_changes(old, new) if not c.file]
        assert shown == _everything_rendered(old, new)
        assert [(c.rel, c.old, c.new) for c in diff.mailbox_changes(None, new) if not c.file] \
            == _everything_rendered(None, new)


def test_objects_that_did_not_change_are_not_rendered(monkeypatch) -> None:
    old = _mailboxes()[0]
    new = copy.deepcopy(old)
    rel, data, _ = render.mailbox_inputs(new)[0]
    holder: Any = new["objects"]
    for part in rel.split("/")[:-1]:
        holder = holder[part]
    holder[f"{rel.split('/')[-1]}.yaml"] = data + b"# edited\n"
    loaded: list[bytes] = []
    original = readback.load_yaml
    monkeypatch.setattr(readback, "load_yaml", lambda b: loaded.append(b) or original(b))
    assert diff.mailbox_changes(old, new) == []  # a comment renders the same
    assert len(loaded) == 2 and len(render.mailbox_inputs(new)) > 1
