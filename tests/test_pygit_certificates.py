"""pygit2 loads without OpenSSL's certificate file (io/pygit.py), and every clone, fetch and push
hands the default certificates to libgit2 first, as pygit2 would have at its load."""
from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SYSTEM = ssl.get_default_verify_paths().cafile  # a real bundle: libgit2 refuses a file without certificates


def _bundle(tmp_path: Path) -> Path:
    if SYSTEM is None:
        pytest.skip("this system has no default certificate file to copy")
    return Path(shutil.copyfile(SYSTEM, tmp_path / "bundle.pem"))

PROBE = """
import json, os, ssl, threading
before = os.environ.get("SSL_CERT_FILE")
from ksgitops.io.pygit import pygit2
from ksgitops.io.git.remote import Credentials
if THREAD:
    threading.Thread(target=threading.Event().wait, daemon=True).start()
pygit2.Repository  # loads it
at_load = pygit2.settings.ssl_cert_file, pygit2.settings.ssl_cert_dir
after_load = os.environ.get("SSL_CERT_FILE")
Credentials()
paths = ssl.get_default_verify_paths()
print(json.dumps({"before": before, "after_load": after_load, "at_load": at_load,
                  "handed": [pygit2.settings.ssl_cert_file, pygit2.settings.ssl_cert_dir],
                  "default": [paths.cafile, paths.capath]}))
"""


def _probe(tmp_path: Path, cert_file: str | None, thread: bool = False) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    if cert_file is not None:
        env["SSL_CERT_FILE"] = cert_file
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", PROBE.replace("THREAD", str(thread))], env=env, cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_the_load_parses_no_certificate_file_and_a_remote_gets_the_default_ones(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    seen = _probe(tmp_path, str(bundle))
    assert seen["at_load"][0] is None  # type: ignore[index]
    assert seen["before"] == seen["after_load"] == str(bundle)  # the environment is as it was
    assert seen["handed"] == seen["default"] and seen["default"][0] == str(bundle)  # type: ignore[index]


def test_without_the_variable_the_environment_stays_without_it(tmp_path: Path) -> None:
    seen = _probe(tmp_path, None)
    assert seen["before"] is None and seen["after_load"] is None
    assert seen["handed"] == seen["default"]


def test_beside_another_thread_pygit2_loads_as_it_would(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    seen = _probe(tmp_path, str(bundle), thread=True)
    assert seen["at_load"][0] == str(bundle)  # type: ignore[index]
    assert seen["handed"] == seen["default"]


def test_a_certificate_file_that_does_not_load_is_a_git_error_at_the_first_remote(tmp_path: Path) -> None:
    empty = tmp_path / "empty.pem"
    empty.write_text("")  # pygit2 itself would refuse it as it loads; here the first remote does
    probe = "from ksgitops.io.git.remote import Credentials\nfor _ in range(2):\n    try:\n        Credentials()\n" \
            "    except Exception as e:\n        print(type(e).__name__, e)\n"
    env = {**os.environ, "SSL_CERT_FILE": str(empty), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True, check=True)
    said = done.stdout.splitlines()
    assert len(said) == 2 and said[0] == said[1], said  # the next remote is told the same, not left to its handshake
    assert said[0].startswith(f"GitError ksgitops: the TLS certificates ({empty}) do not load: ")


def test_without_a_certificate_folder_pygit2_loads_with_its_file(tmp_path: Path) -> None:
    """No folder of certificates (SSL_CERT_DIR naming none, or OpenSSL's default missing, as where
    a bundle is all there is): shown no file either, libgit2 would refuse to load; so it is shown
    the file, as pygit2 would be, and a remote still gets it."""
    bundle = _bundle(tmp_path)
    env = {**os.environ, "SSL_CERT_FILE": str(bundle), "SSL_CERT_DIR": str(tmp_path / "no-such-folder"),
           "PYTHONPATH": str(ROOT)}
    probe = PROBE.replace("THREAD", "False")
    done = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["at_load"] == [str(bundle), None] and seen["handed"] == [str(bundle), None]
    assert seen["after_load"] == str(bundle)
