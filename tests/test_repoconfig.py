"""RepoConfig (ksgitops.yaml): defaults, a full config, strictness, commit messages."""
from __future__ import annotations

from typing import Any

import pytest
import yaml

from ksgitops.core.load.repoconfig import RepoConfig, parse_repo_config
from ksgitops.core.load.schemas import load_schema
from ksgitops.kinds import KindInfo, KindTable
from ksgitops.model import Obj, Origin

ORIGIN = Origin("ksgitops.yaml", 1)
SHA = "0123456789abcdef0123456789abcdef01234567"


def cfg(text: str) -> Obj:
    return Obj("", yaml.safe_load(text), ORIGIN)


def minimal(**spec: Any) -> Obj:
    body: dict[str, Any] = {"apiVersion": "ksgitops.kubestellar.io/v1alpha1", "kind": "RepoConfig"}
    if spec:
        body["spec"] = spec
    return Obj("", body, ORIGIN)


FULL = """
apiVersion: ksgitops.kubestellar.io/v1alpha1
kind: RepoConfig
metadata: {name: fleet}
spec:
  commit:
    authorName: Fleet Bot
    authorEmail: fleet-bot@example.com
    messageTemplate: "fleet: {source_short} ({affected} WECs)"
    skipCi: false
  status: {limit: 3}
  skipSpaces: [scratch, archive]
  kinds:
  - {group: example.com, kind: Widget, resource: widgets}
  - {group: example.com, kind: Gadget, resource: gadgets, namespaced: false}
  push: {retries: 9}
  poll: {intervalSeconds: 15}
"""


def test_no_file_gives_the_documented_defaults() -> None:
    config, problems = parse_repo_config(None)
    assert problems == []
    assert config == RepoConfig()
    assert config.author_name == "ksgitops"
    assert config.author_email == "ksgitops@users.noreply.github.com"
    assert config.message_template == "ksgitops: reconcile {source_short}\n\n[skip ci]"
    assert config.skip_ci is True
    assert config.status_limit == 20
    assert config.skip_spaces == ()
    assert config.kinds == ()
    assert config.push_retries == 5
    assert config.poll_interval == 60.0


@pytest.mark.parametrize("spec", [{}, {"commit": {}, "status": {}, "push": {}, "poll": {}}])
def test_empty_config_gives_defaults(spec: dict[str, Any]) -> None:
    body = {"apiVersion": "ksgitops.kubestellar.io/v1alpha1", "kind": "RepoConfig", "spec": spec}
    assert parse_repo_config(Obj("", body, ORIGIN)) == (RepoConfig(), [])
    assert parse_repo_config(minimal()) == (RepoConfig(), [])


def test_full_config() -> None:
    config, problems = parse_repo_config(cfg(FULL))
    assert problems == []
    assert config == RepoConfig(
        author_name="Fleet Bot",
        author_email="fleet-bot@example.com",
        message_template="fleet: {source_short} ({affected} WECs)",
        skip_ci=False,
        status_limit=3,
        skip_spaces=("archive", "scratch"),
        kinds=(("example.com", "Gadget", "gadgets", False), ("example.com", "Widget", "widgets", True)),
        push_retries=9,
        poll_interval=15.0,
    )
    assert isinstance(config.poll_interval, float)


def test_the_config_is_frozen() -> None:
    with pytest.raises(AttributeError, match="immutable"):
        RepoConfig().status_limit = 1  # type: ignore[misc]


def test_schema_defaults_match_the_dataclass_defaults() -> None:
    spec = load_schema("repoconfig.json")["properties"]["spec"]["properties"]
    commit = spec["commit"]["properties"]
    d = RepoConfig()
    assert commit["authorName"]["default"] == d.author_name
    assert commit["authorEmail"]["default"] == d.author_email
    assert commit["messageTemplate"]["default"] == d.message_template
    assert commit["skipCi"]["default"] is d.skip_ci
    assert spec["status"]["properties"]["limit"]["default"] == d.status_limit
    assert spec["push"]["properties"]["retries"]["default"] == d.push_retries
    assert spec["poll"]["properties"]["intervalSeconds"]["default"] == d.poll_interval
    assert spec["skipSpaces"]["default"] == list(d.skip_spaces)
    assert spec["kinds"]["default"] == list(d.kinds)


@pytest.mark.parametrize(("body_yaml", "expected"), [
    ("spec: {commit: {author: x}}", "spec.commit.author: unknown field"),
    ("spec: {comit: {}}", "spec.comit: unknown field (did you mean 'commit'?)"),
    ("spec: {}\nstatus: {}", "status: unknown field"),
    ("spec: {kinds: [{group: a.io, kind: A, resource: as, scope: Cluster}]}", "spec.kinds[0].scope: unknown field"),
    ("spec: {kinds: [{group: a.io, kind: A}]}", "spec.kinds[0].resource: required field is missing"),
    ("spec: {kinds: [{group: a.io, kind: A, resource: As}]}", "spec.kinds[0].resource: must be a DNS-1123 label"),
    ("spec: {status: {limit: 0}}", "spec.status.limit: must be >= 1 (got integer 0)"),
    ("spec: {status: {limit: '5'}}", "spec.status.limit: must be of type integer (got string '5')"),
    ("spec: {push: {retries: -1}}", "spec.push.retries: must be >= 0"),
    ("spec: {push: {retries: true}}", "spec.push.retries: must be of type integer (got boolean true)"),
    ("spec: {poll: {intervalSeconds: 0}}", "spec.poll.intervalSeconds: must be > 0"),
    ("spec: {skipSpaces: [Scratch]}", "spec.skipSpaces[0]: must be a DNS-1123 label"),
    ("spec: {skipSpaces: [a, a]}", "spec.skipSpaces: must not contain duplicates"),
    ("spec: {skipSpaces: a}", "spec.skipSpaces: must be of type array"),
    ("spec: {commit: {skipCi: 'no'}}", "spec.commit.skipCi: must be of type boolean"),
    ("spec: {commit: {authorEmail: nobody}}", "spec.commit.authorEmail: must be an e-mail address"),
    ("spec: {commit: {authorName: '<x>'}}", "spec.commit.authorName: must be a non-empty name"),
    ("spec: {commit: {messageTemplate: ''}}", "spec.commit.messageTemplate: must be at least 1 character long"),
    ("spec: {commit: {messageTemplate: 'sync {sha}'}}",
     "spec.commit.messageTemplate: unknown placeholder {sha} (allowed: {source}, {source_short}, {affected})"),
    ("spec: {commit: {messageTemplate: 'sync {}'}}", "spec.commit.messageTemplate: unknown placeholder {}"),
    ("spec: {commit: {messageTemplate: 'sync {source'}}", "spec.commit.messageTemplate: "),
    ("spec: {commit: {messageTemplate: 'sync {affected:q}'}}", "spec.commit.messageTemplate: "),
    # a format spec made the check itself build a message of gigabytes (MemoryError, exit 4)
    ("spec: {commit: {messageTemplate: 'sync {source:>3000000000}'}}",
     "spec.commit.messageTemplate: a placeholder takes no format spec or conversion: write {source}"),
    ("spec: {commit: {messageTemplate: 'sync {source_short!r}'}}",
     "spec.commit.messageTemplate: a placeholder takes no format spec or conversion: write {source_short}"),
    ("spec: {kinds: [{group: a.io, kind: A, resource: as}, {group: a.io, kind: A, resource: bs}]}",
     "spec.kinds: A.a.io is listed more than once"),
    ("spec: {kinds: [{group: a.io, kind: A, resource: as}, {group: a.io, kind: B, resource: as}]}",
     "spec.kinds: B.a.io and A.a.io both map to resource as"),
    ("spec: []", "spec: must be of type object (got array)"),
    # a NUL in the author stopped `reconcile --commit` with an internal error (exit 4)
    ('spec: {commit: {authorEmail: "bot\\0@example.com"}}',
     "spec.commit.authorEmail: holds <, > or a control character, which a git author cannot"),
    ('spec: {commit: {authorName: "Fleet\\rBot"}}',  # a raw CR in the commit header
     "spec.commit.authorName: holds <, > or a control character, which a git author cannot"),
    ('spec: {commit: {authorName: "   "}}', "spec.commit.authorName: empty: git records no author without it"),
])
def test_invalid_configs_are_problems_and_fall_back_to_defaults(body_yaml: str, expected: str) -> None:
    obj = cfg("apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: RepoConfig\n" + body_yaml)
    config, problems = parse_repo_config(obj)
    assert config == RepoConfig()
    assert problems, "expected a problem"
    assert all(p.origin == ORIGIN and p.is_error for p in problems)
    assert any(p.message.startswith(f"RepoConfig: {expected}") for p in problems), [p.message for p in problems]


@pytest.mark.parametrize(("head", "expected"), [
    ("apiVersion: ksgitops.kubestellar.io/v1beta1\nkind: RepoConfig",
     "RepoConfig: apiVersion: must be 'ksgitops.kubestellar.io/v1alpha1'"),
    ("apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: Config", "RepoConfig: kind: must be 'RepoConfig'"),
    ("kind: RepoConfig", "RepoConfig: apiVersion: required field is missing"),
    ("apiVersion: ksgitops.kubestellar.io/v1alpha1\nkind: RepoConfig\nmetadata: {name: a, uid: x}",
     "RepoConfig a: metadata.uid: unknown field"),
])
def test_api_version_kind_and_metadata_are_checked(head: str, expected: str) -> None:
    config, problems = parse_repo_config(cfg(head))
    assert config == RepoConfig()
    assert any(p.message.startswith(expected) for p in problems), [p.message for p in problems]


def test_kind_infos_feed_the_kind_table() -> None:
    config, _ = parse_repo_config(cfg(FULL))
    infos = config.kind_infos()
    assert infos == {("example.com", "Widget"): KindInfo("widgets", True),
                     ("example.com", "Gadget"): KindInfo("gadgets", False)}
    table = KindTable(extra=infos)
    assert table.lookup("example.com", "Gadget") == KindInfo("gadgets", False)
    assert table.lookup("apps", "Deployment") == KindInfo("deployments", True)


def test_default_commit_message() -> None:
    assert RepoConfig().commit_message(SHA) == (
        "ksgitops: reconcile 0123456\n\n[skip ci]\n\nKsgitops-Source: " + SHA + "\n")


def test_commit_message_placeholders_and_skip_ci_removed() -> None:
    config, _ = parse_repo_config(cfg(FULL))
    assert config.commit_message(SHA, affected=4) == f"fleet: 0123456 (4 WECs)\n\nKsgitops-Source: {SHA}\n"
    no_skip = RepoConfig(skip_ci=False)
    assert no_skip.commit_message(SHA) == f"ksgitops: reconcile 0123456\n\nKsgitops-Source: {SHA}\n"


def test_skip_ci_is_added_when_the_template_lacks_it() -> None:
    config = RepoConfig(message_template="sync {source}")
    assert config.commit_message(SHA) == f"sync {SHA}\n\n[skip ci]\n\nKsgitops-Source: {SHA}\n"


def test_trailer_is_the_last_paragraph() -> None:
    message = RepoConfig().commit_message(SHA)
    last = message.rstrip("\n").split("\n\n")[-1]
    assert last == f"Ksgitops-Source: {SHA}"


def test_integers_written_as_floats_are_integers() -> None:
    """JSON Schema's integer takes 2.0: the config holds 2 (a float limit stopped `status`)."""
    config, problems = parse_repo_config(minimal(status={"limit": 2.0}, push={"retries": 4.0}))
    assert problems == []
    assert (config.status_limit, config.push_retries) == (2, 4)
    assert type(config.status_limit) is int and type(config.push_retries) is int
