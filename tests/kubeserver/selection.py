"""Label and field selectors of list and watch requests."""
from __future__ import annotations

import re
from collections.abc import Callable

from .errors import bad_request


_REQUIREMENT = re.compile(r"""\s*(?:
    !\s*(?P<absent>[\w./-]+)
  | (?P<key>[\w./-]+)\s*(?: (?P<op>==|=|!=)\s*(?P<value>[\w.-]*)
                          | \s(?P<set>in|notin)\s*\((?P<values>[^)]*)\) )?
  )\s*(?:,|$)""", re.VERBOSE)


def label_selector(text: str) -> Callable[[dict], bool]:
    """A predicate on a labels dict: =, ==, !=, in, notin, exists, !exists."""
    tests: list[Callable[[dict], bool]] = []
    pos = 0
    while pos < len(text):
        m = _REQUIREMENT.match(text, pos)
        if not m or m.end() == pos:
            raise bad_request(f"unable to parse requirement: invalid label selector {text!r}")
        pos = m.end()
        if m["absent"]:
            tests.append(lambda labels, k=m["absent"]: k not in labels)
        elif m["op"] in ("=", "=="):
            tests.append(lambda labels, k=m["key"], v=m["value"]: labels.get(k) == v)
        elif m["op"] == "!=":
            tests.append(lambda labels, k=m["key"], v=m["value"]: labels.get(k) != v)
        elif m["set"]:
            values = {v.strip() for v in m["values"].split(",")}
            present = m["set"] == "in"
            tests.append(lambda labels, k=m["key"], vs=values, p=present:
                         (k in labels and labels[k] in vs) == p)
        else:
            tests.append(lambda labels, k=m["key"]: k in labels)
    return lambda labels: all(t(labels) for t in tests)


def field_selector(text: str) -> Callable[[dict], bool]:
    """metadata.name and metadata.namespace with =, == or !=."""
    tests = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        m = re.fullmatch(r"([\w.]+)\s*(==|=|!=)\s*(.*)", term)
        if not m:
            raise bad_request(f"invalid field selector: {term!r}")
        if m[1] not in ("metadata.name", "metadata.namespace"):
            raise bad_request(f'field label not supported: "{m[1]}"')
        name, equal = m[1].split(".")[1], m[2] != "!="
        tests.append(lambda meta, f=name, eq=equal, v=m[3]: (meta.get(f, "") == v) == eq)
    return lambda meta: all(t(meta) for t in tests)

