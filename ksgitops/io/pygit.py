"""pygit2, loaded on its first use: a command that opens no repository (a work-tree run the record
proves) skips its import, ~0.09 s of libgit2, OpenSSL's certificate store and pygit2's enums.

As it loads, pygit2 hands OpenSSL's default certificate file to libgit2, which parses the whole
store there and then (~10 ms of every command that opens a repository). Only a clone, fetch or push
needs it, so the load is shown no certificate file, and `certificates()` hands the default ones
over before the first of those (io/git/remote.py calls it), as pygit2 would have."""
from __future__ import annotations

import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any, Iterator

from ..model import GitError

CERT_FILE_ENV = "SSL_CERT_FILE"  # where OpenSSL, and Python's ssl for pygit2, look for the default file
_deferred = False  # pygit2 was loaded without the certificates, which certificates() then hands over


@contextlib.contextmanager
def _no_certificate_file() -> Iterator[None]:
    """The environment names no certificate file while pygit2 loads (unless another thread runs:
    the environment is the whole process's, and a program that thread starts would inherit it;
    nor without a folder of certificates: shown neither, libgit2 refuses to load)."""
    global _deferred
    import ssl  # pygit2 loads it too
    if threading.active_count() > 1 or ssl.get_default_verify_paths().capath is None:
        yield
        return
    saved = os.environ.get(CERT_FILE_ENV)
    os.environ[CERT_FILE_ENV] = os.path.join(os.devnull, "none")  # no such file, on any system
    try:
        yield
        _deferred = True
    finally:
        if saved is None:
            del os.environ[CERT_FILE_ENV]
        else:
            os.environ[CERT_FILE_ENV] = saved


class _LoadedWithout:
    """pygit2's own loader, run without a certificate file."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        with _no_certificate_file():
            self.inner.exec_module(module)


def certificates() -> None:
    """libgit2 given the default certificate file and folder (SSL_CERT_FILE, SSL_CERT_DIR, or
    OpenSSL's defaults), once, if loading pygit2 left them out."""
    global _deferred
    settings = pygit2.settings  # loads pygit2 first, if nothing has yet
    if not _deferred:
        return
    import ssl
    paths = ssl.get_default_verify_paths()
    if paths.cafile is not None or paths.capath is not None:
        try:
            settings.set_ssl_cert_locations(paths.cafile, paths.capath)
        except pygit2.GitError as e:  # said again by the next remote, not left to its handshake
            if str(e) != "TLS backend doesn't support certificate locations":  # as pygit2 allows at its load
                raise GitError(f"the TLS certificates ({paths.cafile or paths.capath}) do not load: {e}") from None
    _deferred = False


if TYPE_CHECKING:
    import pygit2 as pygit2
else:
    from ..lazy import lazy_module

    pygit2 = lazy_module("pygit2", wrap=_LoadedWithout)
