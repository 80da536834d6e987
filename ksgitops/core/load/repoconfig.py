"""RepoConfig: the optional `ksgitops.yaml` at the repository root (docs/REFERENCE.md,
"RepoConfig (ksgitops.yaml)", which holds a complete example).

```yaml
apiVersion: ksgitops.kubestellar.io/v1alpha1
kind: RepoConfig
metadata: {name: config}            # optional
spec:                               # every field optional; unknown fields are errors
  commit:
    authorName: ksgitops
    authorEmail: ksgitops@users.noreply.github.com
    messageTemplate: "ksgitops: reconcile {source_short}\\n\\n[skip ci]"
    skipCi: true
  status: {limit: 20}               # WECs listed per CombinedStatus
  skipSpaces: []                    # folders under spaces/ that ksgitops ignores
  kinds:                            # CRDs installed only on the WECs
  - {group: example.com, kind: Widget, resource: widgets, namespaced: true}
  push: {retries: 5}
  poll: {intervalSeconds: 60}
```

`messageTemplate` is a Python format string with the placeholders `{source}` (the source commit's
full sha), `{source_short}` (its first 7 characters) and `{affected}` (the number of affected
WECs), each plain (no format spec or conversion); `RepoConfig.commit_message` fills it and appends the `Ksgitops-Source: <sha>` trailer.
"""
from __future__ import annotations

import string

from msgspec import Struct

from ...kinds import KindInfo
from ...model import Obj, Problem
from .schemas import validate_document

SCHEMA = "repoconfig.json"
SOURCE_TRAILER = "Ksgitops-Source"
FROZEN_TRAILER = "Ksgitops-Frozen"  # what a reconcile kept frozen: `space wmw-c, wec imw1/florin`
MAILBOX_TRAILER = "Ksgitops-Mailbox"  # on a sync agent's report commits
SKIP_CI = "[skip ci]"
TEMPLATE_FIELDS = ("source", "source_short", "affected")

DEFAULT_AUTHOR_NAME = "ksgitops"
DEFAULT_AUTHOR_EMAIL = "ksgitops@users.noreply.github.com"
DEFAULT_MESSAGE_TEMPLATE = "ksgitops: reconcile {source_short}\n\n[skip ci]"
DEFAULT_STATUS_LIMIT = 20
DEFAULT_PUSH_RETRIES = 5
DEFAULT_POLL_INTERVAL = 60.0

KindEntry = tuple[str, str, str, bool]  # (group, kind, resource, namespaced)


class RepoConfig(Struct, frozen=True):
    """The effective configuration; `RepoConfig()` is the all-defaults one."""

    author_name: str = DEFAULT_AUTHOR_NAME
    author_email: str = DEFAULT_AUTHOR_EMAIL
    message_template: str = DEFAULT_MESSAGE_TEMPLATE
    skip_ci: bool = True
    status_limit: int = DEFAULT_STATUS_LIMIT
    skip_spaces: tuple[str, ...] = ()
    kinds: tuple[KindEntry, ...] = ()
    push_retries: int = DEFAULT_PUSH_RETRIES
    poll_interval: float = DEFAULT_POLL_INTERVAL

    def kind_infos(self) -> dict[tuple[str, str], KindInfo]:
        """The `kinds` entries as (group, kind) -> KindInfo, ready for `KindTable(extra=...)`."""
        return {(group, kind): KindInfo(resource, namespaced) for group, kind, resource, namespaced in self.kinds}

    def commit_message(self, source: str, affected: int = 0, subject: str | None = None, frozen: str = "") -> str:
        """The full commit message for generated files reconciled from commit `source`.

        The template (or `subject`, for status commits) is filled in; with `skip_ci` a missing
        `[skip ci]` is added, without it every `[skip ci]` is removed; the trailer
        `Ksgitops-Source: <source>` ends the message, after `Ksgitops-Frozen: <frozen>` when
        something is frozen.
        """
        template = self.message_template if subject is None else subject
        text = template.format(source=source, source_short=source[:7], affected=affected)
        if self.skip_ci and SKIP_CI not in text:
            text = f"{text.rstrip()}\n\n{SKIP_CI}"
        elif not self.skip_ci:
            text = "\n".join(line.replace(SKIP_CI, "").rstrip() for line in text.splitlines())
        text = text.strip() or f"ksgitops: reconcile {source[:7]}"
        frozen_line = f"{FROZEN_TRAILER}: {frozen}\n" if frozen else ""
        return f"{text}\n\n{frozen_line}{SOURCE_TRAILER}: {source}\n"


def parse_repo_config(obj: Obj | None) -> tuple[RepoConfig, list[Problem]]:
    """The RepoConfig of `ksgitops.yaml` (None: no file -> defaults) and its problems.

    Any problem makes the result the all-defaults config (problems are fatal for the caller).
    """
    if obj is None:
        return RepoConfig(), []
    problems = validate_document(SCHEMA, obj.body, obj.origin, _label(obj))
    if problems:
        return RepoConfig(), problems
    spec = obj.body.get("spec") or {}
    commit = spec.get("commit", {})
    kinds = tuple(sorted((k["group"], k["kind"], k["resource"], k.get("namespaced", True))
                         for k in spec.get("kinds", [])))
    config = RepoConfig(
        author_name=commit.get("authorName", DEFAULT_AUTHOR_NAME),
        author_email=commit.get("authorEmail", DEFAULT_AUTHOR_EMAIL),
        message_template=commit.get("messageTemplate", DEFAULT_MESSAGE_TEMPLATE),
        skip_ci=commit.get("skipCi", True),
        status_limit=int(spec.get("status", {}).get("limit", DEFAULT_STATUS_LIMIT)),  # the schema's integer: 2.0 too
        skip_spaces=tuple(sorted(spec.get("skipSpaces", []))),
        kinds=kinds,
        push_retries=int(spec.get("push", {}).get("retries", DEFAULT_PUSH_RETRIES)),
        poll_interval=float(spec.get("poll", {}).get("intervalSeconds", DEFAULT_POLL_INTERVAL)),
    )
    messages = _template_messages(config.message_template) + _kinds_messages(kinds) + \
        _author_messages(config.author_name, config.author_email)
    problems = [Problem(obj.origin, f"{_label(obj)}: {m}") for m in messages]
    return (RepoConfig(), problems) if problems else (config, [])


def _label(obj: Obj) -> str:
    return f"RepoConfig {obj.name}" if obj.name else "RepoConfig"


def _template_messages(template: str) -> list[str]:
    where = "spec.commit.messageTemplate"
    allowed = ", ".join("{" + f + "}" for f in TEMPLATE_FIELDS)
    try:
        parsed = [(f, spec, conversion) for _, f, spec, conversion in string.Formatter().parse(template)
                  if f is not None]
    except ValueError as e:
        return [f"{where}: {e} (write {{{{ and }}}} for literal braces)"]
    fields = [f for f, _, _ in parsed]
    unknown = sorted({f for f in fields if f not in TEMPLATE_FIELDS})
    if unknown:
        names = ", ".join("{" + f + "}" if f else "{}" for f in unknown)
        return [f"{where}: unknown placeholder {names} (allowed: {allowed})"]
    formatted = sorted({f for f, spec, conversion in parsed if spec or conversion})
    if formatted:  # `{source:>3000000000}` would make a message of gigabytes
        return [f"{where}: a placeholder takes no format spec or conversion: write "
                f"{', '.join('{' + f + '}' for f in formatted)}"]
    try:
        template.format(source="0" * 40, source_short="0" * 7, affected=0)
    except (ValueError, TypeError, IndexError, KeyError) as e:
        return [f"{where}: {e}"]
    return []


def _author_messages(name: str, email: str) -> list[str]:
    """What git refuses in a commit's author (or cannot write: NUL ends a C string)."""
    found = []
    for field, value in (("authorName", name), ("authorEmail", email)):
        if not value.strip():
            found.append(f"spec.commit.{field}: empty: git records no author without it")
        elif any(c in "<>\x7f" or c < " " for c in value):
            found.append(f"spec.commit.{field}: holds <, > or a control character, which a git author cannot")
    return found


def _kinds_messages(kinds: tuple[KindEntry, ...]) -> list[str]:
    messages = []
    seen: dict[tuple[str, str], KindEntry] = {}
    by_resource: dict[tuple[str, str], KindEntry] = {}
    for entry in kinds:
        group, kind, resource, _ = entry
        gk = f"{kind}.{group}" if group else kind
        if (group, kind) in seen:
            messages.append(f"spec.kinds: {gk} is listed more than once")
        elif (group, resource) in by_resource:
            other = by_resource[(group, resource)][1]
            other_gk = f"{other}.{group}" if group else other
            messages.append(f"spec.kinds: {gk} and {other_gk} both map to resource {resource}")
        seen[(group, kind)] = entry
        by_resource.setdefault((group, resource), entry)
    return sorted(set(messages))


def trailers(message: str) -> dict[str, str]:
    """The ksgitops trailers (`Ksgitops-Source`, `Ksgitops-Frozen`, `Ksgitops-Mailbox`) of a commit message."""
    found = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in (SOURCE_TRAILER, FROZEN_TRAILER, MAILBOX_TRAILER):
            found[key] = value.strip()
    return found
