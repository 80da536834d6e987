"""What a run reports, as records keep it: the result records a later command answers from
without loading the pipeline (io/git/runrecord.py, io/fs/proof.py, app/status.py).

Light on purpose: a proven no-op unpickles one of these, and every module it names is imported to
do so; PlacementPlan's room (emit) is loaded only when a PlacedResult is.
"""
from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from msgspec import Struct
import orjson

from ..kinds import KindTable
from ..model import Obj, Origin, Problem
from .load.repoconfig import RepoConfig
from .place.frozen import Frozen
from .place.where import Wec
from .tree import Generated

if TYPE_CHECKING:
    from .emit.mailbox import PlacementPlan
    from .load.read import Loaded


class Judged:
    """What a run's problems mean for its exit: errors, and those confined to a space or WEC."""

    __slots__ = ()  # its records' fields only: no attribute set by mistake, none lost to a pickle

    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    @property
    def confined_errors(self) -> list[Problem]:
        """Errors of a space or a WEC (not of one (object, WEC) pair): the run exits 2."""
        return [p for p in self.problems if p.is_error and not p.wec]


class PackedWecs(Mapping[str, Wec]):
    """A record's WECs, unpickled on first look: a proven no-op only says how many there are (a
    thousand WECs with their SyncTargets and Locations took 26 ms to unpickle)."""

    __slots__ = ("_packed", "_count", "_wecs")

    def __init__(self, packed: bytes, count: int) -> None:
        self._packed, self._count = packed, count
        self._wecs: dict[str, Wec] | None = None

    @classmethod
    def of(cls, wecs: Mapping[str, Wec]) -> PackedWecs:
        """As JSON (bodies are JSON values once loaded: ~5x faster than pickling a thousand WECs),
        or pickled when a body holds what JSON cannot say as it is (a string not UTF-8)."""
        try:
            packed = JSON_MARK + orjson.dumps([[mailbox, _row(w.sync_target), [_row(loc) for loc in w.locations]]
                                               for mailbox, w in wecs.items()])
        except (TypeError, orjson.JSONEncodeError):
            packed = pickle.dumps(dict(wecs), protocol=pickle.HIGHEST_PROTOCOL)
        return cls(packed, len(wecs))

    def _loaded(self) -> dict[str, Wec]:
        if self._wecs is None:
            if self._packed.startswith(JSON_MARK):
                self._wecs = {mailbox: Wec(_obj(st), tuple(_obj(loc) for loc in locs))
                              for mailbox, st, locs in orjson.loads(self._packed[1:])}
            else:
                self._wecs = pickle.loads(self._packed)  # noqa: S301 - made by `of` in this process or a record's
        return self._wecs

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, mailbox: str) -> Wec:
        return self._loaded()[mailbox]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __reduce__(self) -> tuple[Any, ...]:
        return PackedWecs, (self._packed, self._count)


JSON_MARK = b"J"  # a pickle starts with its protocol's opcode (0x80)


def _row(obj: Obj) -> list[Any]:
    return [obj.space, obj.body, obj.origin.path, obj.origin.line, obj.key]


def _obj(row: list[Any]) -> Obj:
    space, body, path, line, key = row
    return Obj(space, body, Origin(path, line), key)


class RecordedResult(Judged, Struct):
    """What a reconcile reported, as a record of it keeps it (io/git/runrecord.py): enough to answer
    a command again (problems, WECs, what was frozen) without the objects it computed."""

    problems: list[Problem]
    wecs: Mapping[str, Wec]
    config: RepoConfig
    frozen: Frozen

    @classmethod
    def of(cls, result: Any) -> RecordedResult:  # a core.pipeline.Result, or a PlannedResult
        wecs = result.wecs if isinstance(result.wecs, PackedWecs) else PackedWecs.of(result.wecs)
        return RecordedResult(list(result.problems), wecs, result.config, result.frozen)


class PlannedResult(RecordedResult):
    """A run's result as a diff's plan keeps it (io/fs/plan.py): what the reconcile that applies
    it writes and records, and what the diff shows."""

    generated: Generated
    digests: dict[str, str]

    @classmethod
    def of(cls, result: Any) -> PlannedResult:  # a core.pipeline.Result
        return cls(list(result.problems), PackedWecs.of(result.wecs), result.config, result.frozen,
                   result.generated, result.digests)


class PlacedResult(Judged, Struct):
    """What status reads of a reconcile: where and what (WECs, placements, kinds), each source
    space's objects (`loaded.spaces`: its other fields stay empty) and what was found and frozen;
    no mailbox. Small enough to keep as a record of a commit (app/status.py)."""

    problems: list[Problem]
    wecs: dict[str, Wec]
    config: RepoConfig
    frozen: Frozen
    kinds: KindTable
    placements: dict[str, list[PlacementPlan]]
    loaded: Loaded

    @classmethod
    def of(cls, result: Any) -> PlacedResult:  # a core.pipeline.Result
        from .load.read import Loaded  # unpickling one loads it too: status reads the objects
        return cls(list(result.problems), dict(result.wecs), result.config, result.frozen, result.kinds,
                   dict(result.placements), Loaded(spaces=dict(result.loaded.spaces)))
