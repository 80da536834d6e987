# ksgitops as a container: `ksgitops run` (poll a repo, reconcile, commit, push) serving /healthz on 8080.
#
#   docker build -t ksgitops .
#   docker run --rm -p 8080:8080 -e KSGITOPS_GIT_TOKEN ksgitops run --repo https://github.com/example/fleet
#
# BASE_IMAGE must be Debian-based and provide `python3` with the venv module (python:3.11-slim
# does); the tests pass a locally made Debian image here because they have no registry. Nothing
# secret is baked in: credentials come at run time from the environment (KSGITOPS_GIT_TOKEN) or a
# mounted key file (KSGITOPS_SSH_KEY). See docs/CONTAINER.md.
ARG BASE_IMAGE=python:3.11-slim

# --- builder: the ksgitops wheel and a wheel of every dependency, at the versions of requirements.lock
FROM ${BASE_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY requirements.lock pyproject.toml README.md ./
COPY schema/ schema/
COPY examples/repo/ examples/repo/
COPY ksgitops/ ksgitops/
# A throwaway venv gives a pip that works whether or not the base's Python is "externally managed".
# pygit2's manylinux wheels bundle libgit2, so the image needs neither git nor a compiler.
RUN python3 -m venv /opt/build \
 && /opt/build/bin/pip wheel --no-cache-dir --no-deps --wheel-dir /wheels -r requirements.lock \
 && /opt/build/bin/pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# --- rootfs: the base with ksgitops installed, then cut down to what a runtime needs ---------------
FROM ${BASE_IMAGE} AS rootfs
# Installed offline from the builder's wheels, with the `container` extra (dumb-init, PID 1): a
# dependency missing from the lock fails the build.
# Removed after: pip and setuptools; kubernetes/aio, the asyncio twin of the Kubernetes client
# (66 MB; ksgitops uses the synchronous client) and aiohttp with its helpers, which only it uses;
# the test suites some packages ship. Byte code: all of ksgitops, and of its dependencies what the
# commands below import while they work on the bundled example (which also proves the install);
# the rest (most of the Kubernetes client, pygments' lexers, ...) compiles in memory when imported.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    --mount=type=bind,from=builder,source=/src/requirements.lock,target=/requirements.lock \
    python3 -m venv /opt/ksgitops \
 && /opt/ksgitops/bin/pip install --no-cache-dir --disable-pip-version-check --no-compile --no-index \
        --find-links /wheels --constraint /requirements.lock "ksgitops[container]" \
 && cp /requirements.lock /opt/ksgitops/requirements.lock \
 && /opt/ksgitops/bin/pip uninstall --yes --disable-pip-version-check aiohttp aiohttp-retry aiohappyeyeballs \
        aiosignal frozenlist multidict propcache yarl setuptools \
 && /opt/ksgitops/bin/pip uninstall --yes --disable-pip-version-check pip \
 && site="$(/opt/ksgitops/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
 && rm -rf "$site/kubernetes/aio" "$site"/*/tests \
 && find /opt/ksgitops -name __pycache__ -prune -exec rm -rf {} + \
 && /opt/ksgitops/bin/python -m compileall -q "$site/ksgitops" \
 && export PATH="/opt/ksgitops/bin:$PATH" PYTHONDONTWRITEBYTECODE= \
 && dumb-init --version && ksgitops --version && ksgitops init /tmp/fleet > /dev/null && ksgitops validate /tmp/fleet \
 && ksgitops reconcile /tmp/fleet && ksgitops diff /tmp/fleet && ksgitops status /tmp/fleet \
 && ksgitops wecs /tmp/fleet && ksgitops render florin /tmp/fleet > /dev/null \
 && ksgitops explain florin ConfigMap/commonstuff/httpd-htdocs /tmp/fleet > /dev/null \
 && ksgitops run --repo /tmp/fleet --once --port 0 \
 && python3 -c 'import ksgitops.app.runtime, ksgitops.io.serve, ksgitops.io.git.remote, cel' \
 && rm -rf /tmp/fleet
# What no runtime reads: documentation, manual pages, translations, package manager caches and
# tools (apt, perl), iconv modules (Python has its own codecs), the standard library's tests and
# development tools. The dpkg database stays, for image scanners.
RUN useradd --uid 10001 --user-group --no-create-home --home-dir /data --shell /usr/sbin/nologin ksgitops \
 && mkdir -p /data \
 && chown 10001:10001 /data \
 && stdlib="$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')" \
 && rm -rf /usr/share/doc/* /usr/share/man/* /usr/share/info/* /usr/share/locale/* /usr/share/lintian \
        /usr/share/python-wheels /usr/share/perl5 /usr/lib/*/perl-base /usr/bin/perl* /usr/lib/apt \
        /usr/bin/apt* /usr/lib/*/libapt-* /usr/lib/*/gconv /var/cache/* /var/lib/apt/lists/* /var/log/* \
        "$stdlib/test" "$stdlib/lib2to3" "$stdlib/pydoc_data" "$stdlib/ensurepip" "$stdlib/idlelib" \
        "$stdlib/tkinter" "$stdlib/turtledemo"

# --- final: that file system as one layer (what was removed above takes no room), unprivileged ---
FROM scratch
# The whole file system on purpose (so DL3067 is off): one layer, in which what was removed is gone.
# hadolint ignore=DL3067
COPY --from=rootfs / /
LABEL org.opencontainers.image.title="ksgitops" \
      org.opencontainers.image.description="GitOps reconciler for KubeStellar-style multi-cluster config in a git repo" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/ksgitops/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    KSGITOPS_PORT=8080 \
    KSGITOPS_WORKDIR=/data/clones
WORKDIR /data
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('KSGITOPS_PORT', '8080') + '/healthz', timeout=4)"]
# dumb-init is PID 1: it reaps the processes a command run in the container (`docker exec ...
# ksgitops status --commit`) leaves to it (the child that keeps that command's memos after its
# answer is adopted by PID 1 when the command ends), and passes signals on to ksgitops alone
# (--single-child), as when ksgitops was PID 1: its own children (git, the workers a status run
# spreads over) are not stopped under it.
ENTRYPOINT ["dumb-init", "--single-child", "--", "ksgitops"]
CMD ["run", "--repo", "/data/repo"]
