"""Plain data shared by every pipeline stage: objects with provenance, identities, problems.

Everything here is frozen or treated as immutable once built; stages never mutate an `Obj.body`
they were given (they deep-copy before customizing).
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable, Literal, Mapping

from msgspec import Struct
from msgspec.structs import force_setattr, replace
import orjson

Severity = Literal["error", "warning"]

# Progress of long work: (stage, done, total), stage one of "loading", "computing", "writing".
# The CLI passes one in (a bar on a terminal); the use cases and the core only call it.
Progress = Callable[[str, int, int], None]


class Origin(Struct, frozen=True, order=True):
    """Where an object (or a problem) comes from: a repo-relative path and a 1-based line."""

    path: str
    line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


class ObjRef(Struct, frozen=True, order=True):
    """Object identity inside a space: (apiGroup, kind, namespace, name); "" namespace = cluster-scoped."""

    group: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        gk = f"{self.kind}.{self.group}" if self.group else self.kind
        return f"{gk} {self.namespace}/{self.name}" if self.namespace else f"{gk} {self.name}"


def ref_order(ref: ObjRef) -> tuple[str, str, str, str]:
    """ObjRef's own order as one tuple, for sorting many: 3-4x faster than the dataclass's __lt__."""
    return (ref.group, ref.kind, ref.namespace, ref.name)


def split_api_version(api_version: str) -> tuple[str, str]:
    """'apps/v1' -> ('apps', 'v1'); 'v1' -> ('', 'v1')."""
    group, _, version = api_version.rpartition("/")
    return group, version


class Obj(Struct, frozen=True):
    """One Kubernetes-style object as loaded from a space, with where it came from. Made anew from
    a body, never `replace`d: the memos below would keep the old body's kind and name."""

    space: str
    body: dict[str, Any]
    origin: Origin
    key: str = ""  # content key of the file it came from (git blob id)
    digest: bytes = b""  # of the body: object_digest (below)
    # kind, group, name and namespace, read tens of thousands of times per run: each made from the
    # body on first use (a loaded body is never changed) and kept; never given
    _kind: str | None = None
    _group: str | None = None
    _name: str | None = None
    _namespace: str | None = None

    # equal and hashed by space alone: the body is a dict, the rest says where it came from or is a memo
    def __eq__(self, other: object) -> bool:
        return other.space == self.space if type(other) is Obj else NotImplemented  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((self.space,))

    # each property reads the body itself (no property calls another), and only a value that is
    # not a string yet goes through str()

    @property
    def api_version(self) -> str:
        value = self.body.get("apiVersion", "")
        return value if type(value) is str else str(value)

    @property
    def group(self) -> str:
        found = self._group
        if found is None:
            value = self.body.get("apiVersion", "")
            found = (value if type(value) is str else str(value)).rpartition("/")[0]
            force_setattr(self, "_group", found)
        return found

    @property
    def version(self) -> str:
        return split_api_version(self.api_version)[1]

    @property
    def kind(self) -> str:
        found = self._kind
        if found is None:
            value = self.body.get("kind", "")
            found = value if type(value) is str else str(value)
            force_setattr(self, "_kind", found)
        return found

    @property
    def metadata(self) -> dict[str, Any]:
        md = self.body.get("metadata")
        return md if isinstance(md, dict) else {}

    @property
    def name(self) -> str:
        found = self._name
        if found is None:
            md = self.body.get("metadata")
            value = md.get("name", "") if isinstance(md, dict) else ""
            found = value if type(value) is str else str(value)
            force_setattr(self, "_name", found)
        return found

    @property
    def namespace(self) -> str:
        found = self._namespace
        if found is None:
            md = self.body.get("metadata")
            value = (md.get("namespace", "") or "") if isinstance(md, dict) else ""
            found = value if type(value) is str else str(value)
            force_setattr(self, "_namespace", found)
        return found

    @property
    def labels(self) -> dict[str, str]:
        labels = self.metadata.get("labels")
        return labels if isinstance(labels, dict) else {}

    @property
    def annotations(self) -> dict[str, str]:
        annotations = self.metadata.get("annotations")
        return annotations if isinstance(annotations, dict) else {}

    @property
    def spec(self) -> dict[str, Any]:
        spec = self.body.get("spec")
        return spec if isinstance(spec, dict) else {}

    @property
    def ref(self) -> ObjRef:
        return ObjRef(self.group, self.kind, self.namespace, self.name)

    def __reduce__(self) -> tuple[Any, ...]:  # without the memos: a record keeps a fleet's inventory
        return Obj, (self.space, self.body, self.origin, self.key, self.digest)


def body_digest(body: Any) -> bytes:
    """A digest of a body's content: its canonical JSON (or its repr, for a key JSON has no
    spelling for, such as YAML's `1:`)."""
    try:
        data = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)  # as core/serialize.py canonical_json
    except TypeError:
        data = b"repr\0" + repr(body).encode("utf-8", "backslashreplace")
    return hashlib.blake2b(data, digest_size=16).digest()


def object_digest(obj: Obj) -> bytes:
    """`body_digest` of an object, made once: load makes it as it reads a file, and the parse
    cache keeps it with the object, so a run that reads no new file computes none."""
    found = obj.digest
    if not found:
        found = body_digest(obj.body)
        force_setattr(obj, "digest", found)  # a memo of the (never changed) body: not a new value
    return found


FEW_WECS = 5  # WECs named when one problem concerns many (the rest are counted)


class Problem(Struct, frozen=True, order=True):
    """One finding, always with provenance. `wec` (a mailbox) is set for per-(object, WEC)
    findings, `obj` (an ObjRef's text) when the finding concerns one object. The same finding on
    several WECs is one Problem (`grouped_by_wec`): `wec` is the first of them (sorted) and `wecs`
    holds them all; `wecs` is empty for a single WEC. Mailboxes identify WECs; people read WEC
    names (`named` sets `names`: the SyncTarget names of the first few, sorted)."""

    origin: Origin
    message: str
    severity: Severity = "error"
    wec: str = ""
    obj: str = ""
    wecs: tuple[str, ...] = ()
    names: tuple[str, ...] = ()

    def __str__(self) -> str:
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{self.origin}: {prefix}{self.message}{self.wec_text}"

    @property
    def wec_text(self) -> str:
        """` [WEC a]`, or ` [3 WECs: a, b, c]`, naming at most FEW_WECS of them."""
        if not self.wec:
            return ""
        if not self.wecs:
            return f" [WEC {self.shown[0]}]"
        return f" [{len(self.wecs)} WECs: {few(self.shown, len(self.wecs))}]"

    @property
    def shown(self) -> tuple[str, ...]:
        """The WEC names a message shows: `names`, or the mailboxes when nothing named them."""
        return self.names or self.mailboxes[:FEW_WECS]

    def named(self, names: Mapping[str, str]) -> Problem:
        """This problem naming its WECs as people do: `names` maps a mailbox to its WEC's name
        (the SyncTarget's, or `<space>/<synctarget>` when several inventory spaces share it)."""
        if not self.wec:
            return self
        return replace(self, names=tuple(sorted(names.get(mb, mb) for mb in self.mailboxes)[:FEW_WECS]))

    @property
    def mailboxes(self) -> tuple[str, ...]:
        """Every WEC (mailbox) the finding concerns."""
        return self.wecs or ((self.wec,) if self.wec else ())

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    @property
    def space(self) -> str:
        """The space the finding is in (`spaces/<space>/...`), "" when it is repo-wide."""
        parts = self.origin.path.split("/")
        return parts[1] if len(parts) > 2 and parts[0] == "spaces" else ""


def counted(n: int, one: str, many: str | None = None) -> str:
    """`1 WEC`, `2 WECs`: a count with its noun in the right number (`many`: an irregular plural)."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def few(names: "tuple[str, ...] | list[str]", total: int | None = None) -> str:
    """`a, b, c`: at most FEW_WECS names, then `…` when there are more (`total`: how many in all)."""
    shown = list(names[:FEW_WECS])
    more = (len(names) if total is None else total) > len(shown)
    return ", ".join(shown) + (", …" if more else "")


def grouped_by_wec(problems: "Iterable[Problem]") -> list[Problem]:
    """One Problem per (origin, message, severity, object) for per-WEC findings, naming every WEC
    it concerns: the same missing parameter on 1,000 WECs is one line, not 1,000. Sorted."""
    groups: dict[tuple[Origin, str, str, str], set[str]] = {}
    out: list[Problem] = []
    for problem in problems:
        if problem.wec:
            groups.setdefault((problem.origin, problem.message, problem.severity, problem.obj),
                              set()).update(problem.mailboxes)
        else:
            out.append(problem)
    for (origin, message, severity, obj), found in groups.items():
        wecs = tuple(sorted(found))
        out.append(Problem(origin, message, severity, wecs[0], obj, wecs if len(wecs) > 1 else ()))  # type: ignore[arg-type]
    return sorted(set(out))


def named_wecs(problems: "Iterable[Problem]", names: Mapping[str, str]) -> list[Problem]:
    """Every problem naming its WECs by `names` (mailbox -> WEC name): see `Problem.named`."""
    return [problem.named(names) for problem in problems]


class KsgitopsError(Exception):
    """The one error type: carries problems (with provenance) and the exit code the CLI uses."""

    def __init__(self, problems: list[Problem] | Problem | str, exit_code: int = 2) -> None:
        if isinstance(problems, str):
            problems = [Problem(Origin("ksgitops"), problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = sorted(problems)
        self.exit_code = exit_code
        super().__init__("\n".join(str(p) for p in self.problems))


class GitError(KsgitopsError):
    """Git or push failures: exit code 3."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=3)


class EnvError(KsgitopsError):
    """The environment failed while ksgitops read or wrote a file: a full disk, a file size limit,
    no permission, a read-only file system, a name too long, EIO. Exit 3, like git failures."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(Problem(Origin(path), message), exit_code=3)


def is_secret(body: dict[str, Any]) -> bool:
    return body.get("kind") == "Secret" and body.get("apiVersion") == "v1"
