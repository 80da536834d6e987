"""Reading a mailbox's `reported/` folder: reported-state documents (DESIGN §6), checked, never fatal.

A transport writes `reported/<group|core>/<resource>/<namespace|_cluster>/<name>.yaml` with
`{object: {apiVersion, kind, namespace, name, generation}, status: {...}, reportedAt}`
(schema/reported.json). Whatever is wrong with one file (bad YAML, wrong shape, a path that does not
name an object, an identity that disagrees with the path) is a warning at `file:line`, and that
file is skipped: a broken report must never stop the summary of the others. Pure: no I/O.
"""
from __future__ import annotations

from typing import Any, Mapping

from ..model import Origin, Problem
from .parse import parse_file
from .schemas import validate_reported

REPORT_SUFFIXES = (".yaml", ".yml", ".json")

Reports = dict[str, tuple[Origin, dict[str, Any]]]


def parse_reports(files: Mapping[str, tuple[str, bytes]]) -> tuple[Reports, list[Problem]]:
    """`files` maps a path relative to `reported/` (`apps/deployments/ns/name.yaml`) to (its
    repo-relative path, its bytes). Returns {rel: (origin, document)} for the valid reports, `rel`
    being the object's mailbox path without suffix, and a warning per skipped file."""
    reports: Reports = {}
    problems: list[Problem] = []
    for name in sorted(files):
        path, data = files[name]
        rel, error = _rel(name)
        if error:
            problems.append(_warn(Origin(path), error))
            continue
        parsed = parse_file(path, data)
        if parsed.problems:
            problems.extend(_warn(p.origin, p.message) for p in parsed.problems)
            continue
        if len(parsed.docs) != 1:
            line = parsed.docs[1][0] if parsed.docs else 0
            problems.append(_warn(Origin(path, line), f"reported state: a report file holds exactly one "
                                                      f"document, found {len(parsed.docs)}"))
            continue
        line, doc = parsed.docs[0]
        origin = Origin(path, line)
        found = validate_reported(doc, origin)
        if not found:
            mismatch = _identity_mismatch(rel, doc)
            found = [Problem(origin, f"reported state: {mismatch}")] if mismatch else []
        if found:
            problems.extend(_warn(p.origin, p.message) for p in found)
            continue
        if rel in reports:  # e.g. name.yaml and name.json: keep the first (sorted), report the other
            problems.append(_warn(origin, f"reported state: a second report for {rel}, skipped"))
            continue
        reports[rel] = (origin, doc)
    return reports, problems


def _rel(name: str) -> tuple[str, str]:
    if not name.endswith(REPORT_SUFFIXES):
        return "", "reported state: not a .yaml, .yml or .json file, skipped"
    rel = name.rsplit(".", 1)[0]
    parts = rel.split("/")
    if len(parts) != 4 or not all(parts):
        return "", ("reported state: the path must be <group|core>/<resource>/<namespace|_cluster>/<name>"
                    " below reported/, skipped")
    return rel, ""


def _identity_mismatch(rel: str, doc: dict[str, Any]) -> str:
    """The report's object must be the one its path names (namespace and name; the path's group
    must be the apiVersion's)."""
    group, _resource, namespace, name = rel.split("/")
    identity = doc["object"]
    api_group = str(identity["apiVersion"]).rpartition("/")[0] or "core"
    ns = identity.get("namespace") or "_cluster"
    if (api_group, ns, identity["name"]) != (group, namespace, name):
        return "object does not match the file's path (group, namespace and name must agree), skipped"
    return ""


def _warn(origin: Origin, message: str) -> Problem:
    return Problem(origin, message, "warning")


__all__ = ["parse_reports", "Reports"]
