"""The small records caches hold by the thousand pickle through `__reduce__` (faster than the
state of slotted dataclasses): every field must come back, including one added later."""
from __future__ import annotations

import dataclasses
import pickle

import pytest

from ksgitops.core.place.where import Destination, Wec
from ksgitops.model import Obj, ObjRef, Origin, Problem


@pytest.mark.parametrize("cls", [Origin, ObjRef, Destination, Obj, Problem, Wec])
def test_every_field_comes_back(cls) -> None:
    values = {f.name: (7 if f.type in ("int", int) else f"{f.name}-value") for f in dataclasses.fields(cls)}
    original = cls(**values)
    copy = pickle.loads(pickle.dumps(original, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(copy) is cls and copy == original
    assert {f.name: getattr(copy, f.name) for f in dataclasses.fields(cls)} == values
