# ksgitops as a container: `ksgitops run` (poll a repo, reconcile, commit, push) serving /healthz on 8080.
#
#   docker build -t ksgitops .
#   docker run --rm -p 8080:8080 -e KSGITOPS_GIT_TOKEN ksgitops run --repo https://github.com/example/fleet
#
# BASE_IMAGE must provide `python3` with the venv module (python:3.11-slim does); the tests pass a
# locally made Debian image here because they have no registry. Nothing secret is baked in:
# credentials come at run time from the environment (KSGITOPS_GIT_TOKEN) or a mounted key file
# (KSGITOPS_SSH_KEY). See docs/CONTAINER.md.
ARG BASE_IMAGE=python:3.11-slim

# --- builder: the ksgitops wheel and a wheel of every runtime dependency ------------------------
FROM ${BASE_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY schema/ schema/
COPY examples/repo/ examples/repo/
COPY ksgitops/ ksgitops/
# A throwaway venv gives a pip that works whether or not the base's Python is "externally managed".
# pygit2's manylinux wheels bundle libgit2, so the image needs neither git nor a compiler.
RUN python3 -m venv /opt/build \
 && /opt/build/bin/pip wheel --no-cache-dir --wheel-dir /wheels .

# --- final: a venv with ksgitops installed from those wheels, run as an unprivileged user ----------
FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="ksgitops" \
      org.opencontainers.image.description="GitOps reconciler for KubeStellar-style multi-cluster config in a git repo" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/ksgitops/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    KSGITOPS_PORT=8080 \
    KSGITOPS_WORKDIR=/data/clones
RUN useradd --uid 10001 --user-group --no-create-home --home-dir /data --shell /usr/sbin/nologin ksgitops \
 && mkdir -p /data \
 && chown 10001:10001 /data
# The wheels are bind-mounted from the builder, so they never become a layer of this image.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    python3 -m venv /opt/ksgitops \
 && /opt/ksgitops/bin/pip install --no-cache-dir --disable-pip-version-check --no-index --find-links /wheels /wheels/ksgitops-*.whl \
 && /opt/ksgitops/bin/pip uninstall --yes pip \
 && ksgitops --version
WORKDIR /data
USER 10001:10001
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:' + os.environ.get('KSGITOPS_PORT', '8080') + '/healthz', timeout=4)"]
ENTRYPOINT ["ksgitops"]
CMD ["run", "--repo", "/data/repo"]
