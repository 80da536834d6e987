"""A loopback stand-in for the part of the GitHub REST API the Action uses: issue comments.

    with FakeGitHub(token="t0ken", repository="octo/fleet") as api:
        api.seed(7, ["hello", "<!-- ksgitops-diff -->\nold"])
        ... GITHUB_API_URL=api.url ...
        api.calls          # [Call(method, path, query, authorized)], in order
        api.comments(7)    # the comments now on pull request 7

Routes (as GitHub): GET/POST /repos/{owner}/{repo}/issues/{n}/comments (list with `per_page`
and `page`, create), PATCH/DELETE /repos/{owner}/{repo}/issues/comments/{id}. Lists are paginated
like GitHub's: at most `max_per_page` items (GitHub caps at 100), with a `Link` header whose next
and last URLs use the `/repositories/{id}/...` form GitHub really sends, so a client must follow
the link rather than rebuild the URL. Every request must carry `Authorization: Bearer <token>` or
`token <token>`, else 401 like GitHub. `fail_next(status)` makes the next request fail.
"""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

REPO_ID = 4242
BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    query: str
    authorized: bool
    body: Any = None


class FakeGitHub:
    def __init__(self, token: str, repository: str, max_per_page: int = 100) -> None:
        self.token, self.repository, self.max_per_page = token, repository, max_per_page
        self.calls: list[Call] = []
        self._comments: dict[int, list[dict[str, Any]]] = {}
        self._next_id = 1000
        self._fail: list[int] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    # -- the test's side ------------------------------------------------------------------------
    def seed(self, number: int, bodies: list[str], user: dict[str, Any] | None = None) -> list[int]:
        with self._lock:
            return [self._add(number, body, user or {"login": "someone", "id": 1, "type": "User"})["id"]
                    for body in bodies]

    def comments(self, number: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for c in self._comments.get(number, [])]

    def fail_next(self, status: int) -> None:
        self._fail.append(status)

    def writes(self) -> list[Call]:
        return [c for c in self.calls if c.method != "GET"]

    # -- the server's side ----------------------------------------------------------------------
    def _add(self, number: int, body: str, user: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        comment = {"id": self._next_id, "body": body, "user": user, "issue_number": number,
                   "html_url": f"https://github.com/{self.repository}/pull/{number}#issuecomment-{self._next_id}"}
        self._comments.setdefault(number, []).append(comment)
        return comment

    def _find(self, comment_id: int) -> tuple[int, dict[str, Any]] | None:
        for number, comments in self._comments.items():
            for comment in comments:
                if comment["id"] == comment_id:
                    return number, comment
        return None

    def handle(self, method: str, raw_path: str, headers: Any, body: Any) -> tuple[int, Any, dict[str, str]]:
        parts = urlsplit(raw_path)
        authorized = headers.get("Authorization", "") in (f"Bearer {self.token}", f"token {self.token}")
        with self._lock:
            self.calls.append(Call(method, parts.path, parts.query, authorized, body))
            if self._fail:
                return self._fail.pop(0), {"message": "injected failure"}, {}
            if not authorized:
                return 401, {"message": "Bad credentials"}, {}
            return self._route(method, parts.path, parse_qs(parts.query), body)

    def _route(self, method: str, path: str, query: dict[str, list[str]],
               body: Any) -> tuple[int, Any, dict[str, str]]:
        repo = re.escape(self.repository)
        listing = (re.fullmatch(rf"/repos/{repo}/issues/(\d+)/comments", path)
                   or re.fullmatch(rf"/repositories/{REPO_ID}/issues/(\d+)/comments", path))
        single = re.fullmatch(rf"/repos/{repo}/issues/comments/(\d+)", path)
        if listing and method == "GET":
            return self._list(int(listing.group(1)), query)
        if listing and method == "POST":
            if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                return 422, {"message": "Invalid request: body is required"}, {}
            return 201, self._add(int(listing.group(1)), body["body"], BOT), {}
        found = self._find(int(single.group(1))) if single else None
        if single and found is None:
            return 404, {"message": "Not Found"}, {}
        if found and method == "PATCH":
            if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                return 422, {"message": "Invalid request: body is required"}, {}
            found[1]["body"] = body["body"]
            return 200, found[1], {}
        if found and method == "DELETE":
            self._comments[found[0]].remove(found[1])
            return 204, None, {}
        return 404, {"message": "Not Found"}, {}

    def _list(self, number: int, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        per_page = min(int(query.get("per_page", ["30"])[0]), self.max_per_page)
        page = int(query.get("page", ["1"])[0])
        items = self._comments.get(number, [])
        pages = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page: page * per_page]
        links = []
        base = f"{self.url}/repositories/{REPO_ID}/issues/{number}/comments?per_page={per_page}"
        if page < pages:
            links.append(f'<{base}&page={page + 1}>; rel="next"')
            links.append(f'<{base}&page={pages}>; rel="last"')
        if page > 1:
            links.append(f'<{base}&page=1>; rel="first"')
            links.append(f'<{base}&page={page - 1}>; rel="prev"')
        return 200, chunk, ({"Link": ", ".join(links)} if links else {})


def _handler(api: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                self._reply(400, {"message": "Problems parsing JSON"}, {})
                return
            self._reply(*api.handle(self.command, self.path, self.headers, body))

        def _reply(self, status: int, data: Any, headers: dict[str, str]) -> None:
            payload = b"" if data is None else json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_DELETE = _serve

        def log_message(self, *_: object) -> None:
            pass

    return Handler
