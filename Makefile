# One command per habit. VENV is created on first use so a fresh machine needs only `make`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-slow lint bench shape docs lock clean container-test

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Every format, pdf included: the dev extra that $(STAMP) installs carries the pdf extra.
demo: $(STAMP)
	$(BIN)/probegate scan demo --output json,sarif,junit,md,html,pdf

# One pytest worker per core: most of the suite waits on subprocesses and loopback servers,
# and every test keeps to its own tmp_path, ports and cwd. Run one file serially with
# `$(BIN)/pytest tests/x.py`. Unbuffered, so a CI log shows each line of progress
# (`[ done/total]`, pyproject.toml) when it is printed, not minutes later; the closing lines
# give each skip's reason and the slowest tests. Tests marked `slow` (whole scans, real tools,
# builds: seconds each) run in `make test-slow`; CI runs both (.ci/run).
#
# Bytecode first (COMPILE): the tests start many Python processes that import probegate
# (the CLI, the Action's steps, an agent's own processes), and where PYTHONDONTWRITEBYTECODE is
# set, as on the machines CI runs on, nothing wrote it, so each process compiled every module it
# imported again (0.5 s of CPU a `probegate scan` on a 2-core machine). compileall writes it
# whatever that variable says, and only for the files changed since it last did.
COMPILE := $(BIN)/python -m compileall -q -j 0 src tests/servers

test: $(STAMP)
	$(COMPILE)
	PYTHONUNBUFFERED=1 $(BIN)/pytest -n auto --dist worksteal --durations=5 -m "not slow"

test-slow: $(STAMP)
	$(COMPILE)
	PYTHONUNBUFFERED=1 $(BIN)/pytest -n auto --dist worksteal --durations=5 -m slow

lint: $(STAMP)
	$(BIN)/ruff check src tests bench container
	$(BIN)/ruff format --check src tests bench container
	$(BIN)/mypy
	$(BIN)/check-jsonschema --builtin-schema vendor.github-actions action.yml
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml examples/*.yml
	$(BIN)/zizmor --offline --no-progress action.yml .github/workflows/*.yml examples/*.yml
	$(BIN)/actionlint -no-color .github/workflows/*.yml examples/*.yml
	$(BIN)/lint-imports --no-cache --no-logo
	@if command -v shellcheck >/dev/null; then shellcheck entrypoint.sh container/build-base.sh; \
	elif [ -n "$$CI" ]; then echo "shellcheck is required under CI (apt-get install shellcheck)" >&2; exit 1; \
	else echo "shellcheck not installed (apt-get install shellcheck): entrypoint.sh not checked"; fi
	$(BIN)/hadolint Dockerfile

# Builds the Action's image from the Dockerfile and runs it for real with podman: the quick
# start, a fail-on failure and a cancelled job (container/README.md). Not part of `make test`:
# it needs root, podman, runc and debootstrap (apt-get install podman runc debootstrap), and
# minutes. CONTAINER_TEST_FLAGS=--reproducible also builds twice and compares every file.
CONTAINER_TEST_FLAGS ?=
container-test: $(STAMP)
	$(BIN)/python container/container_test.py $(CONTAINER_TEST_FLAGS)

# docs/probes.md from the library; docs/scoring.md's corpus tables from the corpora.
docs: $(STAMP)
	$(BIN)/python -m probegate.library.docs
	$(BIN)/python -m tests.library.oracles.corpus_tables

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

# The module and function size lists and radon's D-or-worse blocks, against the limits that
# tests/test_code_shape.py holds src/ to (docs/architecture.md).
shape: $(STAMP)
	$(BIN)/python bench/code_shape.py

# requirements/image.txt and build.txt: the Action image's dependencies, every file pinned by its
# sha256 (the Dockerfile installs them with --require-hashes). pip-compile resolves for the
# Python it runs on, so LOCK_PYTHON must be the image's Python (the BASE_IMAGE tag in the
# Dockerfile). Existing pins are kept; `make lock LOCK_FLAGS=--upgrade` moves to the newest.
# The image's lock leaves out what only installing needs: sarif-om names pbr (and pbr
# setuptools) as dependencies but imports neither, and setuptools would add 9 MB and a start-up
# hook (distutils-precedence.pth) to every step. They are listed as unsafe, so commented out,
# and the Dockerfile installs the lock with --no-deps (it is complete without them:
# tests/github/test_image.py checks every locked package's requirements are locked).
LOCK_PYTHON ?= python3.13
LOCK_VENV := build/lock-venv
LOCK_FLAGS ?=
PIP_COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet \
	--generate-hashes --strip-extras --no-emit-index-url --no-emit-find-links $(LOCK_FLAGS)
IMAGE_LEAVES_OUT = --unsafe-package pbr --unsafe-package setuptools

lock:
	rm -rf $(LOCK_VENV)
	$(LOCK_PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/pip install --quiet 'pip-tools==7.6.2'
	$(PIP_COMPILE) $(IMAGE_LEAVES_OUT) --extra pdf --extra mcp \
		--output-file requirements/image.txt pyproject.toml
	$(PIP_COMPILE) --allow-unsafe --only-build-deps --all-build-deps \
		--output-file requirements/build.txt pyproject.toml
	rm -rf $(LOCK_VENV)

clean:
	rm -rf $(VENV) probegate-out .probegate build dist
