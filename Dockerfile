# The probegate GitHub Action (action.yml: runs.using docker, image Dockerfile).
#
# Base image: the official slim Python image, pinned to a Python minor version and a Debian
# release rather than a digest. A digest is the stronger pin, but it must be copied from the
# registry when it is written, and this file was written where the registry could not be
# reached: a digest nobody verified is worse than an honest tag. Pin it when you can verify
# one (`docker buildx imagetools inspect python:3.12-slim-bookworm`) and let Dependabot's
# docker ecosystem keep it current; the tag already keeps the interpreter and the distribution
# from moving under the Action.
#
# No USER and no WORKDIR: GitHub runs the container as root with --workdir /github/workspace
# and documents that both must be left alone. The entrypoint makes what it writes readable.
FROM python:3.12-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

# The package from this repository's source, not from an index: the Action runs exactly the
# code of the commit a workflow pinned. Network is needed here (build dependencies), never when
# the container runs: the demo targets, the probe library and every schema are in the package.
COPY pyproject.toml README.md /opt/probegate/
COPY src /opt/probegate/src
RUN pip install --no-cache-dir /opt/probegate \
    && rm -rf /opt/probegate \
    && probegate --version

# chmod in a RUN rather than COPY --chmod: the classic builder has no --chmod.
COPY entrypoint.sh /entrypoint.sh
RUN chmod 0755 /entrypoint.sh
ENTRYPOINT ["/entrypoint.sh"]
