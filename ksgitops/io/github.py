"""The GitHub edge of the Action: one sticky pull-request comment, the job summary, step outputs.

`action.yml` calls this module as `python -m ksgitops.io.github COMMAND`; it is the only code that
talks to the GitHub REST API. Standard library only (urllib), so the Action needs nothing beyond
ksgitops itself. The token is read from the environment (`GITHUB_TOKEN`), never from the command
line (where `ps` would show it), and never printed: error messages are scrubbed of it.

Sticky comment: the comment whose body starts with a hidden marker (`<!-- ksgitops-diff -->`) is
the Action's own. `sync_sticky_comment` creates it when absent, edits it in place when its text
changes, leaves it alone when it does not, and deletes it when there is nothing to say (an empty
diff). Extra copies (two jobs racing) are deleted. The comment list is paginated (Link headers).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from msgspec import Struct

MARKER = "<!-- ksgitops-diff -->"
COMMENT_LIMIT = 65_000        # GitHub rejects comment bodies over 65,536 characters
SUMMARY_LIMIT = 1_000_000     # and step summaries over 1 MiB per step
MAX_PAGES = 200               # 20,000 comments: a bound, not an expectation
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


class GitHubError(Exception):
    """A GitHub API call failed; the message never contains the token."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Comment(Struct, frozen=True):
    id: int
    body: str


class GitHub:
    """A minimal GitHub REST client: issue comments of one repository."""

    def __init__(self, api_url: str, repository: str, token: str, timeout: float = 30.0) -> None:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repository):
            raise GitHubError(f"not an owner/name repository: {repository!r}")
        self.api_url = api_url.rstrip("/")
        self.repository = repository
        self._token = token
        self.timeout = timeout

    def comments(self, number: int) -> Iterator[Comment]:
        """Every comment of issue or pull request `number`, following the pagination links."""
        url: str | None = f"{self.api_url}/repos/{self.repository}/issues/{number}/comments?per_page=100"
        for _ in range(MAX_PAGES):
            if url is None:
                return
            data, headers = self._call("GET", url)
            for item in data or []:
                yield Comment(int(item["id"]), str(item.get("body") or ""))
            url = self._next_page(headers.get("Link", ""))
        raise GitHubError(f"more than {MAX_PAGES} pages of comments on #{number}")

    def create_comment(self, number: int, body: str) -> Comment:
        data, _ = self._call("POST", f"{self.api_url}/repos/{self.repository}/issues/{number}/comments",
                             {"body": body})
        return Comment(int(data["id"]), str(data.get("body") or ""))

    def update_comment(self, comment_id: int, body: str) -> None:
        self._call("PATCH", f"{self.api_url}/repos/{self.repository}/issues/comments/{comment_id}", {"body": body})

    def delete_comment(self, comment_id: int) -> None:
        self._call("DELETE", f"{self.api_url}/repos/{self.repository}/issues/comments/{comment_id}")

    def _next_page(self, link: str) -> str | None:
        match = _LINK_NEXT.search(link)
        if not match:
            return None
        url = match.group(1)
        if _origin(url) != _origin(self.api_url):  # the token goes to the API host only
            raise GitHubError(f"pagination link leaves {_origin(self.api_url)}: {_origin(url)}")
        return url

    def _call(self, method: str, url: str, payload: Any = None) -> tuple[Any, Any]:
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(url, data=data, method=method, headers={
            "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "ksgitops", "Authorization": f"Bearer {self._token}",
            **({"Content-Type": "application/json"} if data is not None else {})})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
                return (json.loads(raw) if raw.strip() else None), response.headers
        except urllib.error.HTTPError as e:
            detail = e.read(2000).decode("utf-8", "replace")
            raise GitHubError(self._scrub(f"{method} {_path(url)}: HTTP {e.code}: {_message(detail)}"), e.code) from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise GitHubError(self._scrub(f"{method} {_path(url)}: {e}")) from None

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _path(url: str) -> str:
    return urlsplit(url).path


def _message(body: str) -> str:
    try:
        return str(json.loads(body).get("message", ""))[:300]
    except (ValueError, AttributeError):
        return body[:300]


def sync_sticky_comment(client: GitHub, number: int, body: str | None, marker: str = MARKER) -> str:
    """Make the marked comment say `body` (None or blank: delete it); returns what was done."""
    mine = [c for c in client.comments(number) if c.body.lstrip().startswith(marker)]
    keep, extra = (mine[0], mine[1:]) if mine else (None, [])
    for comment in extra:
        client.delete_comment(comment.id)
    if not body or not body.strip():
        if keep:
            client.delete_comment(keep.id)
            return "deleted"
        return "absent"
    text = comment_body(body, marker)
    if keep is None:
        client.create_comment(number, text)
        return "created"
    if keep.body == text:
        return "unchanged"
    client.update_comment(keep.id, text)
    return "updated"


def comment_body(markdown: str, marker: str = MARKER, limit: int = COMMENT_LIMIT) -> str:
    """The marker line, then the Markdown, cut to fit a comment."""
    return f"{marker}\n{fit_markdown(markdown, limit - len(marker) - 1, _summary_hint())}"


def _summary_hint() -> str:
    server, repo, run = (os.environ.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    where = f"[the job summary]({server}/{repo}/actions/runs/{run})" if server and repo and run else "the job summary"
    return f"The diff is too long for a comment: it is cut here; see {where} for more."


def fit_markdown(markdown: str, limit: int, hint: str = "Cut here: the rest is too long.") -> str:
    """`markdown` if it fits in `limit` characters; else its first lines, open fences and
    <details> closed, then `hint`."""
    if len(markdown) <= limit:
        return markdown
    budget = limit - len(hint) - 40  # room for the closing tags and the hint
    kept: list[str] = []
    size = 0
    for line in markdown.splitlines(keepends=True):
        if size + len(line) > budget:
            break
        kept.append(line)
        size += len(line)
    text = "".join(kept)
    if sum(1 for line in kept if line.startswith("```")) % 2:
        text += "\n```\n"
    if text.count("<details>") > text.count("</details>"):
        text += "</details>\n"
    return f"{text}\n**{hint}**\n"


def pull_request_number(event_path: str | None, event_name: str | None) -> int | None:
    """The pull request a workflow event is about, or None (a push, a schedule, no payload)."""
    if event_name and not event_name.startswith("pull_request"):
        return None
    if not event_path or not Path(event_path).is_file():
        return None
    payload = json.loads(Path(event_path).read_text(encoding="utf-8"))
    number = (payload.get("pull_request") or {}).get("number") or payload.get("number")
    return int(number) if number else None


def json_value(path: Path, key: str) -> str:
    """A field of a JSON document as a step output: lists as compact JSON, booleans as true/false,
    null as the empty string."""
    value = json.loads(path.read_text(encoding="utf-8")).get(key)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


# --- the entry point action.yml calls -------------------------------------------------------------

def _sticky(args: argparse.Namespace) -> int:
    number = pull_request_number(os.environ.get("GITHUB_EVENT_PATH"), os.environ.get("GITHUB_EVENT_NAME"))
    if number is None:
        print("ksgitops: not a pull request event: no comment")
        return 0
    token = os.environ.get("GITHUB_TOKEN", "")
    if not token:
        print("::warning::ksgitops: no github-token: the pull request comment is skipped")
        return 0
    body = None if args.delete else Path(args.body_file).read_text(encoding="utf-8")
    client = GitHub(os.environ.get("GITHUB_API_URL", "https://api.github.com"),
                    os.environ.get("GITHUB_REPOSITORY", ""), token)
    try:
        done = sync_sticky_comment(client, number, body, args.marker)
    except GitHubError as e:
        if e.status == 403:  # a read-only token: pull requests from forks
            print(f"::warning::ksgitops: cannot comment on #{number} (read-only token?): {e}")
            return 0
        print(f"::error::ksgitops: pull request comment on #{number}: {e}", file=sys.stderr)
        return 1
    print(f"ksgitops: pull request #{number}: comment {done}")
    return 0


def _summary(args: argparse.Namespace) -> int:
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return 0
    text = fit_markdown(Path(args.body_file).read_text(encoding="utf-8"), args.limit)
    with open(target, "a", encoding="utf-8") as out:
        out.write(text if text.endswith("\n") else text + "\n")
    return 0


def _get(args: argparse.Namespace) -> int:
    print(json_value(Path(args.file), args.key))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ksgitops.io.github",
                                     description="GitHub Action helpers for ksgitops (token from $GITHUB_TOKEN).")
    commands = parser.add_subparsers(dest="command", required=True)
    sticky = commands.add_parser("sticky-comment", help="create, update or delete the marked PR comment")
    what = sticky.add_mutually_exclusive_group(required=True)
    what.add_argument("--body-file", help="Markdown for the comment (an empty file deletes it)")
    what.add_argument("--delete", action="store_true", help="delete the comment")
    sticky.add_argument("--marker", default=MARKER)
    sticky.set_defaults(handler=_sticky)
    summary = commands.add_parser("step-summary", help="append Markdown to $GITHUB_STEP_SUMMARY, cut to fit")
    summary.add_argument("--body-file", required=True)
    summary.add_argument("--limit", type=int, default=SUMMARY_LIMIT)
    summary.set_defaults(handler=_summary)
    get = commands.add_parser("json-get", help="print a field of a JSON file as a step output value")
    get.add_argument("file")
    get.add_argument("key")
    get.set_defaults(handler=_get)
    args = parser.parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
