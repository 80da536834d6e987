"""The Space document of a mailbox (`spaces/<mailbox>/space.yaml`), as reconcile writes it and as
every later run reads it back to know the folder is a mailbox.

It is written from a template (far cheaper than a YAML dump, once per mailbox), and read back
without a YAML parser when its bytes are exactly what the template makes of some values: after a
run that wrote a thousand mailboxes, the next one would otherwise parse and check a thousand
space.yaml files before it could start. Anything else (a file edited by hand, one written by an
older ksgitops) is read as any source is.
"""
from __future__ import annotations

import re
from typing import Any

from ..serialize import yaml_str

SPACE_API = "space.kubestellar.io/v1alpha1"
SYNC_TARGET_ANNOTATION = "edge.kubestellar.io/sync-target-name"
UID_ANNOTATION = "edge.kubestellar.io/sync-target-uid"
INVENTORY_ANNOTATION = "ksgitops.kubestellar.io/inventory-space"  # only ksgitops writes it


def space_yaml(wec_name: str, uid: str, inventory: str, mailbox: str) -> bytes:
    """The mailbox's Space: the WEC it serves (name and uid) and the inventory space it is in."""
    return (
        f"apiVersion: {SPACE_API}\n"
        "kind: Space\n"
        "metadata:\n"
        "  annotations:\n"
        f"    {SYNC_TARGET_ANNOTATION}: {yaml_str(wec_name)}\n"
        f"    {UID_ANNOTATION}: {yaml_str(uid)}\n"
        f"    {INVENTORY_ANNOTATION}: {yaml_str(inventory)}\n"
        f"  name: {yaml_str(mailbox)}\n"
        "spec:\n"
        "  SpaceProviderDescName: git\n"
        "  Type: managed\n"
    ).encode()


_SCALAR = rb"('(?:[^'\n]|'')*'|[^'\"\s][^\n]*)"  # plain or single-quoted (double-quoted: parsed)
_HOLE = "xvaluex"
_MAX_BYTES = 4096
_BRACKETS = re.compile(rb"[\[\]{}]")
_TEMPLATE = re.compile(re.escape(space_yaml(_HOLE, _HOLE, _HOLE, _HOLE)).replace(_HOLE.encode(), _SCALAR))


def own_space_document(data: bytes) -> dict[str, Any] | None:
    """The document `data` holds when it is exactly space_yaml of some values, else None: the
    values are read back and rendered again, so only the template's own output is recognised
    (a YAML parser reads those bytes as the same document: tests/test_mailboxspace.py)."""
    if len(data) > _MAX_BYTES or _BRACKETS.search(data):
        return None  # the parser's own checks (size, brackets counted even when quoted) decide
    match = _TEMPLATE.fullmatch(data)
    if match is None:
        return None
    values = [_unquoted(token) for token in match.groups()]
    if None in values:
        return None
    wec_name, uid, inventory, mailbox = values  # type: ignore[misc]
    if space_yaml(wec_name, uid, inventory, mailbox) != data:  # type: ignore[arg-type]
        return None
    return {
        "apiVersion": SPACE_API,
        "kind": "Space",
        "metadata": {"annotations": {SYNC_TARGET_ANNOTATION: wec_name, UID_ANNOTATION: uid,
                                     INVENTORY_ANNOTATION: inventory},
                     "name": mailbox},
        "spec": {"SpaceProviderDescName": "git", "Type": "managed"},
    }


def _unquoted(token: bytes) -> str | None:
    try:
        text = token.decode()
    except UnicodeDecodeError:
        return None
    return text[1:-1].replace("''", "'") if text.startswith("'") else text
