"""The plan of a reconcile, for people: per-WEC unified diffs of rendered objects (pure).

Like pip-tools' `diff`, this only computes; `reconcile` does. Secret values are redacted on both
sides, so a diff says that a Secret changed and never what it holds.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from ...model import counted
from ...names import file_stem, printable
from ..tree import FileTree, walk

RECONCILE_OWNS = frozenset({"space.yaml", "syncerconfig.yaml", "kustomization.yaml"})  # and objects/, patches/

if TYPE_CHECKING:
    from ..emit.readback import Unreadable


class ObjectChange(Struct, frozen=True):
    """One object a WEC would receive differently; both sides rendered, Secret values redacted."""

    rel: str  # objects/<rel>.yaml in the mailbox
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    file: str = ""  # the file in the mailbox, when it is not objects/<rel>.yaml
    patched: bool = False  # rendered with patches/<rel>.json on either side: the base copy may not change

    @property
    def path(self) -> str:
        return self.file or f"objects/{self.rel}.yaml"

    @property
    def body(self) -> dict[str, Any]:
        return self.new if self.new is not None else self.old  # type: ignore[return-value]

    @property
    def title(self) -> str:
        """`Kind[.group] [namespace/]name`, as problems name objects (characters a terminal would
        obey, or that would end the header line, escaped)."""
        group, kind, namespace, name = _identity(self.body)
        if not kind or not name:  # no object to name (a file that does not read, the kustomization)
            return printable(self.path)
        gk = f"{kind}.{group}" if group else kind
        return printable(f"{gk} {namespace}/{name}" if namespace else f"{gk} {name}")

    @property
    def file_name(self) -> str:
        """`[group.]version.Kind.namespace.name`: how `kubectl diff` names an object's file, with
        the name spelled as in mailboxes (names.file_stem: short, portable, never colliding)."""
        group, kind, namespace, name = _identity(self.body)
        if not kind or not name:
            return self.path.replace("/", ".")
        version = str(self.body.get("apiVersion") or "").rpartition("/")[2]
        return f"{group + '.' if group else ''}{version}.{kind}.{namespace}.{file_stem(name)}"


def _identity(body: dict[str, Any]) -> tuple[str, str, str, str]:
    md = body.get("metadata")
    md = md if isinstance(md, dict) else {}
    group = str(body.get("apiVersion") or "").rpartition("/")[0]
    return group, str(body.get("kind") or ""), str(md.get("namespace") or ""), str(md.get("name") or "")


class WecDiff(Struct):
    wec: str
    mailbox: str
    diff: str
    changes: list[ObjectChange] = field(default_factory=list)
    gone: list[str] | None = None  # the mailbox goes away with its SyncTarget: the files reconcile did not write

    @property
    def gone_line(self) -> str:
        if self.gone is None:
            return ""
        others = f", and with it {counted(len(self.gone), 'file')} reconcile did not write: {_first_paths(self.gone)}" \
            if self.gone else ""
        return f"spaces/{printable(self.mailbox)}: the mailbox goes away with its SyncTarget{others}"


def _first_paths(paths: list[str]) -> str:
    """The first five paths, printable, then `...` when there are more."""
    return ", ".join(printable(p) for p in paths[:5]) + (", ..." if len(paths) > 5 else "")


def files_not_written(tree: FileTree | None) -> list[str]:
    """The files of a mailbox that reconcile does not own (reports, upsynced objects, a person's)."""
    return sorted(path for path, _ in walk(tree or {})
                  if path not in RECONCILE_OWNS and not path.startswith(("objects/", "patches/")))


class DiffResult(Struct):
    changed: bool
    wecs: list[WecDiff] = field(default_factory=list)
    frozen: list[Any] = field(default_factory=list)  # core.isolation.FrozenUnit: what reconcile would keep
    others: list[str] = field(default_factory=list)  # generated roots that change, sending no WEC anything new

    @property
    def others_line(self) -> str:
        """What changes besides what WECs receive (placement records, slices, problems files, a
        mailbox's files that render the same): reconcile would write them, so diff exits 1."""
        if not self.others:
            return ""
        return (f"{counted(len(self.others), 'generated folder or file', 'generated folders and files')} would "
                f"change without a WEC receiving different objects: {_first_paths(self.others)}")

    @property
    def affected(self) -> list[str]:
        return [w.wec for w in self.wecs]

    def as_json(self) -> dict[str, Any]:
        return {"changed": self.changed, "affectedWecs": self.affected,
                "wecs": {w.wec: {"mailbox": w.mailbox, "diff": w.diff,
                                 **({"goesAway": {"notWritten": w.gone}} if w.gone is not None else {})}
                         for w in self.wecs},
                "frozen": [u.as_json() for u in self.frozen], "generatedOnly": self.others}


def mailbox_changes(old: FileTree | None, new: FileTree | None, mailbox: str = "") -> list[ObjectChange]:
    """The objects of one mailbox that render differently (none when they render the same), and
    its kustomization.yaml and SyncerConfig when they change: one says what `kubectl apply -k`
    sends, the other steers what the WEC's syncer does. A file that does not read (a hand edit, a
    merge's conflict) is a difference too, shown as what is wrong with it."""
    from .render import mailbox_inputs, redact_pair  # a diff that finds nothing never renders
    folder = f"spaces/{mailbox}" if mailbox else ""
    old_inputs, new_inputs = (mailbox_inputs(old) if old else []), (mailbox_inputs(new) if new else [])
    moved = _moved(old_inputs, new_inputs)  # an object whose base copy and patch are the same renders the same
    before = _rendered(old_inputs, moved, folder)
    after = _rendered(new_inputs, moved, folder)
    patched = {rel for rel, _, patch in (*old_inputs, *new_inputs) if patch is not None}
    changes = []
    for rel in sorted(set(before) | set(after)):
        a, b = redact_pair(before.get(rel), after.get(rel), rel.startswith(SECRETS))
        if a != b:
            changes.append(ObjectChange(rel, a, b, patched=rel in patched))
    for name, view in ((KUSTOMIZATION, _kustomization), (SYNCER_CONFIG, None)):
        files = (old.get(name) if old else None, new.get(name) if new else None)
        if files[0] != files[1] and (name != KUSTOMIZATION or (old and new and not _follows(old, folder))):
            sides = (_generated_mapping(name, files[0], folder, view), _generated_mapping(name, files[1], folder, view))
            if sides[0] != sides[1]:
                changes.append(ObjectChange(name, *sides, file=name))
    return changes


def _follows(tree: FileTree, folder: str) -> bool:
    """Whether a mailbox's kustomization.yaml lists its objects/ and patches/ files as reconcile
    does, and nothing else: then the objects' changes say all that its own change does."""
    from ..emit.readback import Unreadable, read_mapping
    data = tree.get(KUSTOMIZATION)
    try:
        doc = read_mapping(KUSTOMIZATION, data) if isinstance(data, bytes) else None
    except Unreadable:
        return False
    if doc is None or doc.get("kind") != "Kustomization" or not set(doc) <= _KUSTOMIZATION_KEYS:
        return False
    resources, patches = doc.get("resources") or [], doc.get("patches") or []
    if not isinstance(resources, list) or not isinstance(patches, list) or \
            not all(isinstance(p, dict) and set(p) <= {"path", "target"} for p in patches):
        return False
    folders = [(top, tree.get(top)) for top in ("objects", "patches")]
    listed = sorted(f"{top}/{path}" for top, sub in folders if isinstance(sub, dict) for path, _ in walk(sub))
    return sorted(map(str, resources)) + sorted(str(p.get("path")) for p in patches) == listed


def _rendered(inputs: list[tuple[str, bytes, bytes | None]], only: set[str], folder: str
              ) -> dict[str, dict[str, Any]]:
    from ..emit.readback import Unreadable
    from .render import render_inputs
    found: dict[str, dict[str, Any]] = {}
    for item in inputs:
        if item[0] in only:
            try:
                found.update(render_inputs([item], folder=folder))
            except Unreadable as e:
                found[item[0]] = unreadable(e)
    return found


def unreadable(error: Unreadable) -> dict[str, Any]:
    """What a diff shows for a file that does not read: where and what is wrong, never its text."""
    return {"unreadable": str(error.problem())}


def _moved(old: list[tuple[str, bytes, bytes | None]], new: list[tuple[str, bytes, bytes | None]]) -> set[str]:
    before = {rel: (data, patch) for rel, data, patch in old}
    after = {rel: (data, patch) for rel, data, patch in new}
    return {rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel)}


SYNCER_CONFIG = "syncerconfig.yaml"
KUSTOMIZATION = "kustomization.yaml"  # what `kubectl apply -k` reads: a change to it changes what the WEC receives
SECRETS = "core/secrets/"  # where a mailbox keeps Secrets (names.rel_path)
_KUSTOMIZATION_KEYS = frozenset({"apiVersion", "kind", "resources", "patches"})  # what reconcile writes there
HIDDEN = "<not shown>"


def _generated_mapping(name: str, data: Any, folder: str, view: Any) -> dict[str, Any] | None:
    from ..emit.readback import Unreadable, read_mapping
    if not isinstance(data, bytes):
        return None
    try:
        doc = read_mapping(f"{folder}/{name}" if folder else name, data)
    except Unreadable as e:
        return unreadable(e)
    return view(doc) if view is not None else doc


def _kustomization(doc: dict[str, Any]) -> dict[str, Any]:
    """A kustomization as a diff shows it: what reconcile writes there; anything a person added (a
    secretGenerator, an inline patch) only by its key, as it may hold a Secret's data."""
    shown: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "patches" and isinstance(value, list):
            value = [{k: v if k in ("path", "target") else HIDDEN for k, v in p.items()} if isinstance(p, dict)
                     else HIDDEN for p in value]
        shown[str(key)] = value if key in _KUSTOMIZATION_KEYS else HIDDEN
    return shown


def changes_diff(mailbox: str, changes: list[ObjectChange]) -> str:
    """Unified diffs of the changes; each file header names the object after a tab (where diff
    puts a timestamp, so `patch` still reads the path)."""
    import difflib
    from ..serialize import dump_yaml
    chunks: list[str] = []
    for change in changes:
        a_text = dump_yaml(change.old).decode().splitlines(keepends=True) if change.old is not None else []
        b_text = dump_yaml(change.new).decode().splitlines(keepends=True) if change.new is not None else []
        path = f"spaces/{mailbox}/{change.path}"
        title = change.title + (f" (rendered with patches/{printable(change.rel)}.json)" if change.patched else "")
        chunks.extend(difflib.unified_diff(a_text, b_text, f"a/{path}", f"b/{path}", title, title))
    return "".join(chunks)


def mailbox_diff(mailbox: str, old: FileTree | None, new: FileTree | None) -> str:
    """Unified diff of the rendered objects of one mailbox ('' when they render the same)."""
    return changes_diff(mailbox, mailbox_changes(old, new, mailbox))


def markdown(result: DiffResult) -> str:
    import html
    lines = [f"### ksgitops diff: {counted(len(result.wecs), 'WEC')} affected", ""]
    if not result.wecs:
        lines.append("No WEC would receive different objects." if not result.changed
                     else "Generated files change, but no WEC would receive different objects.")
    for w in result.wecs:
        fence = "`" * max(3, 1 + max((len(run) for run in _BACKTICKS.findall(w.diff)), default=0))
        lines += [f"<details><summary>{html.escape(printable(w.wec))} (<code>spaces/{w.mailbox}</code>)</summary>",
                  "", f"{fence}diff", w.diff.rstrip("\n"), fence, "</details>", ""]
        if w.gone is not None:
            lines += [html.escape(w.gone_line, quote=False), ""]
    if result.others:
        lines += [html.escape(result.others_line, quote=False), ""]
    if result.frozen:
        lines += ["#### Frozen", "", "These parts have errors: reconcile keeps them as they are (the run fails).", ""]
        lines += [f"- `spaces/{printable(u.space)}`: {html.escape(printable(u.kept), quote=False)}" for u in result.frozen]
    return "\n".join(lines) + "\n"


_BACKTICKS = re.compile(r"`{3,}")  # a fence longer than any run in the diff: no line can close it early


def text(result: DiffResult) -> str:
    body = "".join(w.diff + (f"{w.gone_line}\n" if w.gone is not None else "") for w in result.wecs)
    frozen = "".join(f"{u}\n" for u in result.frozen)
    others = f"{result.others_line}\n" if result.others else ""
    return body + frozen + others + f"{counted(len(result.wecs), 'WEC')} affected\n"
