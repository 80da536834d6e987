"""File-tree comparisons used by `diff`: KEEP subtrees ignored, empty folders equal to none."""
from __future__ import annotations

import pytest

from ksgitops.core.tree import KEEP, has_files, same_files


@pytest.mark.parametrize("old, new, same", [
    ({"a": b"1"}, {"a": b"1"}, True),
    ({"a": b"1"}, {"a": b"2"}, False),
    ({"a": b"1"}, {"a": b"1", "b": b"x"}, False),
    ({"a": b"1", "reported": {"r": b"x"}}, {"a": b"1", "reported": KEEP}, True),
    ({"a": b"1"}, {"a": b"1", "objects": {}}, True),          # an empty folder is no folder
    (None, {"objects": {"core": {}}}, True),
    (None, {"x": b"1"}, False),
    ({"x": b"1"}, None, False),
    (None, None, True),
    ({"d": b"file"}, {"d": {"f": b"1"}}, False),             # a file where a folder should be
    ({"d": {"f": b"1"}}, {"d": b"file"}, False),
])
def test_same_files(old, new, same) -> None:
    assert same_files(old, new) is same


def test_has_files_looks_through_folders_but_not_markers() -> None:
    assert has_files({"a": {"b": {"c": b""}}})
    assert not has_files({"a": {"b": {}}, "reported": KEEP})
