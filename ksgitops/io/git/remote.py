"""The git remote edge: clone, fetch, push (never forced), credentials from the environment.

Credentials (never logged, never written to disk by ksgitops):
- `KSGITOPS_GIT_TOKEN` (HTTPS): sent as the password, user `KSGITOPS_GIT_USERNAME` (default
  `x-access-token`, what GitHub expects for app and Actions tokens);
- `KSGITOPS_SSH_KEY` (path to a private key; `KSGITOPS_SSH_PASSPHRASE` if it has one), user `git`
  unless the URL names one.
Without them, URLs that need no credentials (git://, file paths, public HTTPS) work as they are.
"""
from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Any

from ..pygit import certificates, pygit2

from ...model import GitError
from ..fs.durable import moving_refs

REMOTE = "origin"


class PushRejected(GitError):
    """The remote did not take the push (it moved on, or refused): fetch and recompute."""


def Credentials() -> Any:  # noqa: N802 - called as the class it makes
    """RemoteCallbacks that answer credential requests from the environment and record what the
    remote said of a push (the class is made on the first call: pygit2 loads when it is needed).
    Every clone, fetch and push takes one, so libgit2 gets its certificates here (io/pygit.py)."""
    certificates()
    return _credentials_class()()


@cache
def _credentials_class() -> Any:
    class EnvironmentCredentials(pygit2.RemoteCallbacks):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.rejected: list[str] = []
            self._asked = 0

        def credentials(self, url: str, username_from_url: str | None, allowed_types: Any) -> Any:
            self._asked += 1
            if self._asked > 3:  # libgit2 asks again after a refusal: do not loop
                raise GitError(f"{redact(url)}: authentication failed")
            token = os.environ.get("KSGITOPS_GIT_TOKEN")
            key = os.environ.get("KSGITOPS_SSH_KEY")
            if key and allowed_types & pygit2.enums.CredentialType.SSH_KEY:
                return pygit2.Keypair(username_from_url or "git", None, key, os.environ.get("KSGITOPS_SSH_PASSPHRASE", ""))
            if token and allowed_types & pygit2.enums.CredentialType.USERPASS_PLAINTEXT:
                return pygit2.UserPass(os.environ.get("KSGITOPS_GIT_USERNAME", "x-access-token"), token)
            raise GitError(f"{redact(url)}: credentials needed (set KSGITOPS_GIT_TOKEN or KSGITOPS_SSH_KEY)")

        def push_update_reference(self, refname: str, message: str | None) -> None:
            if message is not None:
                self.rejected.append(f"{refname}: {message}")
    return EnvironmentCredentials


_USERINFO = re.compile(r"(//)[^/@\s]+@")
_SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:")


def is_url(repo: str) -> bool:
    """A remote (scheme://… or scp-like user@host:path), not a local path."""
    return "://" in repo or _SCP_LIKE.match(repo) is not None


def scrub(text: str) -> str:
    """`text` on one line, the user:password@ part of any URL in it masked (`//***@`)."""
    return " ".join(_USERINFO.sub(r"\1***@", text).split())


def redact(url: str) -> str:
    """A URL fit for logs: any user:password@ part removed."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        return f"{scheme}://{rest.split('@', 1)[1]}"
    return url


def clone(url: str, path: Path, branch: str) -> pygit2.Repository:
    """A bare clone of `url` at `path` (shallow where the transport allows), or the existing one."""
    if (path / "HEAD").exists():
        repo = pygit2.Repository(str(path))
        if _url(repo, REMOTE) != url:
            with moving_refs(repo.path, "config"):
                repo.remotes.set_url(REMOTE, url)
        return repo
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return pygit2.clone_repository(url, str(path), bare=True, checkout_branch=branch, callbacks=Credentials(),
                                       depth=1)
    except pygit2.GitError as e:
        if "shallow" not in str(e).lower():
            raise GitError(f"{redact(url)}: clone failed: {_reason(e)}") from None
    try:  # a transport without shallow support: a full clone
        return pygit2.clone_repository(url, str(path), bare=True, checkout_branch=branch, callbacks=Credentials())
    except pygit2.GitError as e:
        raise GitError(f"{redact(url)}: clone failed: {_reason(e)}") from None


def fetch(repo: pygit2.Repository, branch: str, remote: str = REMOTE, extra: tuple[str, ...] = ()) -> pygit2.Oid:
    """Fetch `branch` (and the `extra` refspecs); returns the remote's head (also at
    refs/remotes/<remote>/<branch>)."""
    tracking = f"refs/remotes/{remote}/{branch}"
    try:
        with moving_refs(repo.path, tracking, *map(_moved_by, extra), "FETCH_HEAD", "shallow"):
            repo.remotes[remote].fetch([f"+refs/heads/{branch}:{tracking}", *extra], callbacks=Credentials(),
                                       depth=1 if repo.is_shallow else 0)
    except (pygit2.GitError, KeyError) as e:
        raise GitError(_locked(e, f"fetch of {branch}")
                       or f"fetch of {branch} from {redact(_url(repo, remote))} failed: {_reason(e)}") from None
    ref = repo.references.get(tracking)
    if ref is None:
        raise GitError(f"the remote has no branch {branch}")
    return ref.resolve().target  # type: ignore[return-value]


def push(repo: pygit2.Repository, branch: str, remote: str = REMOTE) -> None:
    """Push the local `branch` to the remote's; never forced. PushRejected when the remote moved."""
    callbacks = Credentials()
    ref = f"refs/heads/{branch}"
    tracking = f"refs/remotes/{remote}/{branch}"
    with moving_refs(repo.path, tracking):  # libgit2 moves the tracking ref after a push too
        try:
            repo.remotes[remote].push([f"{ref}:{ref}"], callbacks=callbacks)
        except pygit2.GitError as e:
            raise PushRejected(_locked(e, f"push of {branch}")
                               or f"push of {branch} to {redact(_url(repo, remote))} refused: {_reason(e)}") from None
        if callbacks.rejected:
            raise PushRejected(f"push of {branch} refused: {'; '.join(callbacks.rejected)}")
        repo.references.create(tracking, repo.references[ref].target, force=True)


def _moved_by(refspec: str) -> str:
    """What a fetch refspec moves, as `durable.moving_refs` names it: its destination, or the
    folder below which a pattern's destinations lie (`refs/remotes/x/*`)."""
    destination = refspec.lstrip("+").rpartition(":")[2]
    return f"{destination.partition('*')[0].rpartition('/')[0]}/*" if "*" in destination else destination


def _url(repo: pygit2.Repository, remote: str) -> str:
    try:
        return str(repo.remotes[remote].url)
    except KeyError:
        return remote


def _reason(error: BaseException) -> str:
    """libgit2's message, one line, with any credentials in URLs masked."""
    return scrub(str(error))


def _locked(error: BaseException, what: str) -> str | None:
    """When libgit2 could not take a lock file in the clone: `what` failed, the file named with the
    way out (one a killed ksgitops left on what it was moving, the next cycle clears itself:
    durable.moving_refs). The remote's URL is left out: the cause is here, and the file's path is long."""
    locked = _LOCK_FAILED.search(str(error))
    if locked is None:
        return None
    return (f"{what} failed: {locked[1]} is there (a git process is working in this clone, or one was killed: "
            f"when none is running, remove that file)")


_LOCK_FAILED = re.compile(r"failed to lock file '([^']+\.lock)'")
