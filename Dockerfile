# The probegate GitHub Action (action.yml: runs.using docker, image Dockerfile).
#
# What runs is pinned by the commit a workflow pins (docs/github-action.md, "What the pin pins"):
# - the base image: BASE_IMAGE below is the one place it is named. It is the official slim
#   Python image on Debian 13 "trixie", the current Debian stable. Pin it by digest by appending
#   `@sha256:<digest>` as read from the registry when you bump it:
#     docker buildx imagetools inspect python:3.13-slim-trixie --format '{{json .Manifest.Digest}}'
#   (tests/github/test_image.py accepts the tag alone or tag@sha256 with 64 hex digits, and
#   checks the lock files were made for the same Python minor);
# - every Python dependency: requirements/image.txt (runtime, the pdf and mcp extras included,
#   without pbr and setuptools, which nothing imports at run time) and requirements/build.txt
#   (setuptools and wheel), pinned with every file's sha256 and installed with --require-hashes;
#   `make lock` regenerates both;
# - probegate itself: built from this commit's source, offline (--no-index).
# Nothing else is fetched: no apt-get, no curl, no unpinned pip install.
#
# The same commit gives the same files in the image: compiled bytecode is hash-based (no
# timestamps), pip keeps no cache, and the wheel is built with a fixed SOURCE_DATE_EPOCH, so
# its bytes (and the hash pip records of it in direct_url.json and RECORD) repeat. The
# standard library is byte-compiled too (the slim base ships none, and the image runs with
# PYTHONDONTWRITEBYTECODE: every start would compile it again, about a second a step).
# Layer tarballs also record file times; for an image digest that repeats byte for byte, build
# with BuildKit's SOURCE_DATE_EPOCH and rewrite-timestamp (docs/github-action.md shows the
# command). GitHub's own `image: Dockerfile` build does not.
#
# No USER and no WORKDIR: GitHub runs the container as root with --workdir /github/workspace
# and documents that both must be left alone. The entrypoint makes what it writes readable.
ARG BASE_IMAGE=python:3.13-slim-trixie

# Stage 1: probegate's wheel, from this commit's source, with hash-pinned build tools only.
FROM ${BASE_IMAGE} AS wheel
# The wheel's file times (a zip records them): fixed, so the same source gives the same wheel.
# 1980-01-01, the earliest a zip can record; a build may pass the commit's time instead.
ARG SOURCE_DATE_EPOCH=315532800
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH}
COPY requirements/build.txt /build/requirements/build.txt
RUN python -m pip install --no-cache-dir --require-hashes -r /build/requirements/build.txt
COPY pyproject.toml README.md LICENSE /build/src-tree/
COPY src /build/src-tree/src
RUN python -m pip wheel --no-cache-dir --no-deps --no-build-isolation --no-index \
        --wheel-dir /build/wheels /build/src-tree

# Stage 2: the Action's image: the locked runtime, then the wheel, nothing from an index twice.
FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
COPY requirements/image.txt /opt/probegate/requirements/image.txt
# --no-deps: the lock is complete, and leaves out on purpose what sarif-om names but never
# imports (pbr, and the setuptools pbr brings: the Makefile's `lock` says why).
RUN python -m pip install --no-cache-dir --no-compile --no-deps --require-hashes \
        -r /opt/probegate/requirements/image.txt
COPY --from=wheel /build/wheels /opt/probegate/wheels
# unchecked-hash bytecode holds a hash of its source, never a time: the same bytes every build.
# The standard library and the installed packages alike (purelib may lie outside stdlib).
RUN python -m pip install --no-cache-dir --no-compile --no-deps --no-index \
        /opt/probegate/wheels/probegate-*.whl \
    && python -m compileall -q -j 0 --invalidation-mode unchecked-hash \
        "$(python -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')" \
        "$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
    && rm -rf /opt/probegate/wheels \
    && probegate --version

# chmod in a RUN rather than COPY --chmod: the classic builder has no --chmod.
COPY entrypoint.sh /entrypoint.sh
RUN chmod 0755 /entrypoint.sh
ENTRYPOINT ["/entrypoint.sh"]
