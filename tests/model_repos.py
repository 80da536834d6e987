"""A repo model (tests/repo_strategy.py) written out in a file layout (which file each document goes
to, document order, .yaml/.yml/.json), what reconcile made of it and said about it, and an
independent reading of a mailbox (its base copies with its patches applied, as kustomize does),
for tests/test_property.py."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import jsonpatch
import yaml


# --- writing a model to disk -----------------------------------------------------------------


def layout_plain(model: dict[str, list[dict[str, Any]]]) -> dict[str, bytes]:
    """One multi-document all.yaml per space, documents in model order."""
    return {f"spaces/{space}/all.yaml": yaml.safe_dump_all(docs, sort_keys=False).encode()
            for space, docs in model.items() if docs} | {
        f"spaces/{space}/.keep.txt": b"" for space, docs in model.items() if not docs}


def layout_shuffled(model: dict[str, list[dict[str, Any]]], rnd: random.Random) -> dict[str, bytes]:
    """Documents shuffled over several files (.yaml, .yml, single-document .json), in subfolders,
    with comments and blank lines that move every document to other line numbers."""
    files: dict[str, bytes] = {}
    for space, docs in model.items():
        docs = list(docs)
        rnd.shuffle(docs)
        buckets: dict[str, list[dict[str, Any]]] = {}
        for doc in docs:
            name = rnd.choice(["a.yaml", "b.yml", "sub/c.yaml", "sub/deeper/d.yaml", "json"])
            if name == "json":
                files[f"spaces/{space}/j{len(files)}.json"] = json.dumps(doc, indent=rnd.choice([None, 2])).encode()
            else:
                buckets.setdefault(name, []).append(doc)
        for name, bucket in buckets.items():
            texts = ["\n" * rnd.randint(0, 2) + "# moved\n" * rnd.randint(0, 2)
                     + yaml.safe_dump(doc, sort_keys=rnd.choice([True, False]),
                                      default_flow_style=rnd.choice([False, None]))
                     for doc in bucket]
            files[f"spaces/{space}/{name}"] = "---\n".join(texts).encode()
        if not docs:
            files[f"spaces/{space}/.keep.txt"] = b""
    return files


def write(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def generated(repo: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted((repo / "spaces").rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if path.is_file() and rel.endswith("/.ksgitops/problems.yaml"):
            out[rel] = without_provenance(path.read_bytes())
        elif path.is_file() and ("-mb-" in rel.split("/")[1] or "/.ksgitops/" in rel):
            out[rel] = path.read_bytes()
    return out


def without_provenance(data: bytes) -> bytes:
    """A problems file says where each problem is (file, line), which moves with the layout: the
    rest must not."""
    doc = yaml.safe_load(data)
    doc["problems"] = sorted(json.dumps({k: re.sub(r"spaces/[^ :]+(:\d+)?", "<source>", v) if k == "message" else v
                                         for k, v in p.items() if k not in ("file", "line")}, sort_keys=True)
                             for p in doc["problems"])
    return json.dumps(doc, sort_keys=True).encode()


def all_files(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(repo.rglob("*"))}


def mailboxes(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / "spaces").iterdir() if "-mb-" in p.name)


def error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip() and "warning:" not in ln]


def without_sources(stderr: str) -> list[str]:
    """The problem lines with every `spaces/...:line` provenance replaced by a marker, sorted."""
    return sorted(re.sub(r"spaces/[^ :]+(:\d+)?", "<source>", ln) for ln in stderr.splitlines() if ln.strip())


def problem_keys(stderr: str) -> list[tuple[str, str]]:
    """(object, WEC) of each per-(object, WEC) error line, and the placement of each warning, sorted.

    Only these, not the whole message: which missing parameter a message names depends on the key
    order of the source mapping (a known bug, see test_missing_parameter_message_...).
    """
    keys = []
    for line in without_sources(stderr):
        wec = re.search(r"\[(?:WEC |\d+ WECs: )([^\]]+)\]$", line)  # one WEC, or the first few of several
        head = line.split(": ")[1] if wec else line
        keys += [(head, name) for name in wec.group(1).split(", ")] if wec else [(head, "")]
    return sorted(keys)


def assert_no_crash(result: Any, err: str) -> None:
    assert result in (0, 2), (result, err)
    assert "Traceback" not in err, err
    assert "internal error" not in err, err


# --- an independent reading of a mailbox: what kustomize does --------------------------------


def apply_mailbox(folder: Path) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """The objects of a mailbox with their patches applied, read the way kustomize reads it."""
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    resources = kustomization.get("resources") or []

    def files(sub: str, suffix: str) -> list[str]:
        base = folder / sub
        return sorted(f"{sub}/{p.relative_to(base).as_posix()}" for p in base.rglob(f"*{suffix}")) if base.is_dir() else []

    assert sorted(resources) == files("objects", ".yaml"), "kustomization resources are exactly objects/"
    objects, rels = {}, {}
    for rel in resources:
        body = yaml.safe_load((folder / rel).read_text())
        md = body["metadata"]
        key = (body["apiVersion"], body["kind"], md.get("namespace", ""), md["name"])
        assert key not in objects, f"{key} listed twice"
        objects[key], rels[key] = body, rel[len("objects/"):-len(".yaml")]
    patches = kustomization.get("patches") or []
    assert sorted(p["path"] for p in patches) == files("patches", ".json"), "every patch file is listed once"
    for entry in patches:
        target = entry["target"]
        api = f"{target['group']}/{target['version']}" if target.get("group") else target["version"]
        unescape = lambda text: text.replace("\\.", ".")
        key = (api, target["kind"], unescape(target.get("namespace", "")), unescape(target["name"]))
        assert key in objects, f"patch {entry['path']} targets no object"
        assert entry["path"] == f"patches/{rels[key]}.json", "a patch has the path of its object"
        ops = json.loads((folder / entry["path"]).read_text())
        assert ops, "no empty patch files"
        objects[key] = jsonpatch.apply_patch(objects[key], ops)
    for body in objects.values():
        if body["metadata"].get("annotations") == {}:
            del body["metadata"]["annotations"]
    return objects


def keyed(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    return {(o["apiVersion"], o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}
