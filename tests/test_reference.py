"""docs/REFERENCE.md cannot silently fall behind the code: its command tables are made from the
click definitions, every kind ksgitops reads has a section naming each field of its schema, every
RepoConfig field has a row with its default, its complete `ksgitops.yaml` sets every field and
`ksgitops validate` accepts it, and the annotations and environment variables the code reads are
listed. Code comments that point into it name sections that exist.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from conftest import ROOT
from ksgitops.app import agent
from ksgitops.cli.commands import cli as ksgitops_cli
from ksgitops.cli.doc import OPTIONS_BEGIN, OPTIONS_END, options_reference, replace_in, synopsis
from ksgitops.core.customize import customizer as customize
from ksgitops.core.place import base
from ksgitops.core.load import mailboxspace
from ksgitops.core.place import what
from ksgitops.core.load.repoconfig import RepoConfig, parse_repo_config
from ksgitops.core.load.schemas import SCHEMA_FILES, load_schema
from ksgitops.model import Obj, Origin

REFERENCE = ROOT / "docs" / "REFERENCE.md"


def reference() -> str:
    return REFERENCE.read_text(encoding="utf-8")


def headings(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, text without backticks) of every Markdown heading outside code blocks."""
    blanked = re.sub(r"^```.*?^```", lambda m: " " * len(m.group(0)), text, flags=re.M | re.S)  # offsets kept
    return [(m.start(), len(m.group(1)), m.group(2).replace("`", "").strip())
            for m in re.finditer(r"^(#{1,6}) (.+)$", blanked, re.M)]


def section(text: str, title: str) -> str:
    """The text of the section headed `title`, its subsections included."""
    marks = headings(text)
    for i, (start, level, heading) in enumerate(marks):
        if heading == title:
            end = next((s for s, lv, _ in marks[i + 1:] if lv <= level), len(text))
            return text[start:end]
    raise AssertionError(f"docs/REFERENCE.md has no section {title!r}")


def kind_section(text: str, api_version: str, kind: str) -> str:
    """The section of a kind: headed `Kind`, or `Kind (<version>)` when versions differ in shape."""
    version = api_version.rpartition("/")[2]
    titles = [h for _, _, h in headings(text) if h == kind or h.startswith(f"{kind} (")]
    exact = [t for t in titles if t == f"{kind} ({version})"]
    assert exact or len(titles) == 1, f"{kind}: want one heading `{kind}` or `{kind} ({version})`, got {titles}"
    return section(text, exact[0] if exact else titles[0])


def property_names(node: Any) -> Iterator[str]:
    """Every property name a schema defines, in its own file (references to common.json not followed)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                yield from value
            yield from property_names(value)
    elif isinstance(node, list):
        for item in node:
            yield from property_names(item)


# --- the command line ------------------------------------------------------------------------

def test_the_options_block_is_made_from_the_click_definitions() -> None:
    text = reference()
    start, end = text.index(OPTIONS_BEGIN), text.index(OPTIONS_END) + len(OPTIONS_END) + 1
    assert text[start:end] == options_reference(), "run: python -m ksgitops.cli.doc --write docs/REFERENCE.md"
    block = text[start:end]
    for name, command in ksgitops_cli.commands.items():
        assert f"#### `ksgitops {name}`" in block, name
        for param in command.params:
            if not getattr(param, "hidden", False) and param.opts[0].startswith("-"):
                assert f"`{param.opts[0]}`" in section(block, f"ksgitops {name}"), (name, param.opts)


def test_a_flag_pair_shows_both_names() -> None:
    """`--git/--no-git` showed as `[--git]` in the usage line and the table, hiding the way out."""
    assert "[--git/--no-git]" in synopsis("init", ksgitops_cli.commands["init"])
    assert "| `--git`, `--no-git` | flag |" in options_reference()


def test_replace_in_updates_each_block_and_refuses_a_file_without_one() -> None:
    stale = f"intro\n{OPTIONS_BEGIN}\nold\n{OPTIONS_END}\noutro\n"
    assert replace_in(stale) == f"intro\n{options_reference()}outro\n"
    with pytest.raises(ValueError):
        replace_in("no generated block here\n")


# --- kinds and fields --------------------------------------------------------------------------

@pytest.mark.parametrize("api_version,kind", sorted(SCHEMA_FILES), ids=lambda v: str(v))
def test_every_kind_has_a_section_naming_each_field(api_version: str, kind: str) -> None:
    text = reference()
    rows = [line for line in section(text, "Kinds").splitlines() if line.startswith("|")]
    assert any(f"`{api_version}`" in row and f"| {kind} |" in row for row in rows), \
        f"the table of kinds has no row for {api_version} {kind}"
    own = kind_section(text, api_version, kind)
    schema = load_schema(SCHEMA_FILES[(api_version, kind)])
    missing = sorted({n for n in property_names(schema) if f"`{n}`" not in own and not re.search(
        rf"`[^`\n]*\b{re.escape(n)}\b[^`\n]*`", own)} - {"apiVersion", "kind", "metadata"})
    assert not missing, f"the section of {kind} ({api_version}) does not name {missing}"


def repoconfig_fields(node: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(dotted path, schema) of every leaf field of RepoConfig below metadata and spec."""
    for name, sub in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        if sub.get("type") == "object" and "properties" in sub:
            yield from repoconfig_fields(sub, f"{path}.")
        elif path not in ("apiVersion", "kind"):
            yield path, sub


def test_every_repoconfig_field_has_a_row_with_its_default() -> None:
    rows = {}  # field -> its row; a row's first cell may name several fields
    for line in section(reference(), "RepoConfig (ksgitops.yaml)").splitlines():
        if line.startswith("| `"):
            rows.update((name, line) for name in re.findall(r"`([\w.]+)`", line.split(" | ")[0]))
    fields = dict(repoconfig_fields(load_schema("repoconfig.json")))
    assert len(fields) >= 12
    for path, schema in fields.items():
        assert path in rows, f"RepoConfig field {path} is not in the table"
        if "default" in schema:
            shown = json.dumps(schema["default"])
            assert f"`{shown}`" in rows[path], f"{path}: the row does not show the default {shown}"


def example_config() -> str:
    blocks = [b for b in re.findall(r"^```yaml\n(.*?)^```", reference(), re.S | re.M) if "kind: RepoConfig" in b]
    assert len(blocks) == 1, "want exactly one RepoConfig example"
    return blocks[0]


def test_the_complete_repoconfig_example_sets_every_field() -> None:
    doc = yaml.safe_load(example_config())
    for path in dict(repoconfig_fields(load_schema("repoconfig.json"))):
        value: Any = doc
        for part in path.split("."):
            assert isinstance(value, dict) and part in value, f"the example does not set {path}"
            value = value[part]
    assert {k.get("namespaced", "absent") for k in doc["spec"]["kinds"]} == {False, "absent"}, \
        "the example shows a kinds entry without `namespaced` (the default) and one cluster-scoped"
    config, problems = parse_repo_config(Obj("", doc, Origin("ksgitops.yaml", 1)))
    assert problems == []
    defaults = RepoConfig()
    same = [f for f in RepoConfig.__struct_fields__ if getattr(config, f) == getattr(defaults, f)]
    assert same == ["skip_ci"], "every field but skipCi (true: keep CI from running on ksgitops' commits) shows a non-default value"


def test_ksgitops_validate_accepts_the_example_and_refuses_it_broken(cli: Any, example: Path) -> None:
    text = example_config()
    (example / "ksgitops.yaml").write_text(text)
    ok = cli("validate", "-o", "json", str(example))
    assert ok.code == 0, ok
    assert not [p for p in json.loads(ok.out)["problems"] if p["file"] == "ksgitops.yaml"]
    (example / "ksgitops.yaml").write_text(text.replace("  push:\n", "  pushes: {}\n  push:\n"))
    broken = cli("validate", str(example))
    assert broken.code == 2 and "ksgitops.yaml" in broken.err and "pushes" in broken.err, broken


# --- annotations, labels and environment variables ---------------------------------------------------

def test_every_annotation_and_label_the_code_reads_or_writes_is_listed() -> None:
    table = section(reference(), "Labels and annotations")
    keys = [customize.CUSTOMIZER_ANNOTATION, customize.EXPAND_ANNOTATION, agent.CREATE_ONLY_ANNOTATION,
            agent.CONTEXT_ANNOTATION, mailboxspace.SYNC_TARGET_ANNOTATION, mailboxspace.UID_ANNOTATION,
            mailboxspace.INVENTORY_ANNOTATION,
            base.PROJECTED_LABEL, what.NAMESPACE_NAME_LABEL]
    for key in keys:
        assert f"`{key}" in table, f"{key} is not in the table of labels and annotations"


def test_every_environment_variable_the_code_reads_is_listed() -> None:
    table = section(reference(), "Environment variables")
    source = "\n".join(p.read_text() for p in (ROOT / "ksgitops").rglob("*.py"))
    names = set(re.findall(r"environ(?:\.get)?\(\s*\"((?:KSGITOPS|KUBE|NO_|PAGER|XDG)\w*)\"", source))
    names |= set(re.findall(r"envvar=\"(\w+)\"", source))
    names.add("KUBECTL_EXTERNAL_DIFF")
    assert {"KSGITOPS_GIT_TOKEN", "KSGITOPS_PORT", "NO_COLOR"} <= names  # the scan finds them
    missing = sorted(n for n in names if f"`{n}`" not in table)
    assert not missing, f"not in the table of environment variables: {missing}"


# --- code comments that point into the reference ---------------------------------------------------

def test_code_comments_name_sections_that_exist() -> None:
    titles = {h for _, _, h in headings(reference())}
    cited = 0
    for path in [*(ROOT / "ksgitops").rglob("*.py"), *(ROOT / "tests").glob("*.py"), *(ROOT / "benchmarks").glob("*.py")]:
        for match in re.finditer(r"REFERENCE\.md,? \"([^\"]+)\"", path.read_text()):
            cited += 1
            assert match.group(1) in titles, f"{path.relative_to(ROOT)}: no section {match.group(1)!r} in docs/REFERENCE.md"
    assert cited >= 10
