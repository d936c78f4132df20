"""What a package index and a packager see: the sdist and the wheel, built for real.

``python -m build --no-isolation`` builds the sdist, then the wheel from that sdist (so a
wheel that builds proves the sdist is complete), with the setuptools of the dev extras and no
network. It builds from a copy of the checkout: a build writes into its source tree, and
parallel test workers must not share one. The archives are then read as an index and an
installer read them.
"""

from __future__ import annotations

import email
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.message import Message
from pathlib import Path

import pytest

from probegate import __version__

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
REPO_URL = "https://github.com/probegate/probegate"
# A Markdown link or image whose target has no scheme and is not an in-page anchor: dead on an
# index page, which renders the description away from the repository.
RELATIVE_LINK = re.compile(r"!?\[[^\]]*\]\((?!https?://|#|mailto:)([^)\s]+)\)")


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    source = tmp_path_factory.mktemp("source") / "probegate"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "node_modules", "build", "dist", "*.egg-info", "__pycache__",
            ".probegate", "probegate-out", ".*_cache", ".hypothesis",
        ),
    )  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (sdist,) = out.glob("probegate-*.tar.gz")
    (wheel,) = out.glob("probegate-*.whl")
    return sdist, wheel


def _sdist_names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as tar:
        return {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}


def _wheel_metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(zf.read(name))


def test_license_file_is_the_apache_2_text() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert PYPROJECT["project"]["license"] == "Apache-2.0"


@pytest.mark.slow
def test_sdist_carries_the_tests_and_what_they_read(dists: tuple[Path, Path]) -> None:
    names = _sdist_names(dists[0])
    for needed in (
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "Makefile",
        "action.yml",
        "entrypoint.sh",
        "Dockerfile",
        "requirements/image.txt",
        "src/probegate/__init__.py",
        "tests/conftest.py",
        "tests/core/test_packaging.py",
        "tests/data/golden/scan.sarif",
        "docs/github-action.md",
        "examples/probegate.yml",
        ".github/workflows/ci.yml",
    ):
        assert needed in names, needed
    tracked = subprocess.run(
        ["git", "ls-files", "tests"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if tracked.returncode == 0:  # in a git checkout: every tracked test file is shipped
        missing = set(tracked.stdout.split()) - names
        assert not missing, sorted(missing)[:10]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.startswith((".venv/", "node_modules/", ".probegate/"))]


@pytest.mark.slow
def test_wheel_is_the_package_with_its_license(dists: tuple[Path, Path]) -> None:
    with zipfile.ZipFile(dists[1]) as zf:
        names = set(zf.namelist())
    assert f"probegate-{__version__}.dist-info/licenses/LICENSE" in names
    assert "probegate/py.typed" in names
    assert any(n.startswith("probegate/library/probes/") and n.endswith(".yaml") for n in names)
    assert "probegate/reports/data/sarif-schema-2.1.0.json" in names
    assert "probegate/scaffold/data/workflow.yml" in names  # probegate init --workflow
    assert not [n for n in names if n.startswith("tests/")]


@pytest.mark.slow
def test_metadata_is_complete(dists: tuple[Path, Path]) -> None:
    meta = _wheel_metadata(dists[1])
    assert meta["Name"] == "probegate" and meta["Version"] == __version__
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["Author"]
    classifiers = meta.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Topic :: Security" in classifiers and "Typing :: Typed" in classifiers
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Source", "Issues"} <= set(urls)
    assert all(u.startswith(REPO_URL) for u in urls.values())
    requires = meta.get_all("Requires-Dist") or []
    assert any(r.startswith("reportlab") and 'extra == "pdf"' in r for r in requires)
    assert "pdf" in (meta.get_all("Provides-Extra") or [])
    # AgentDojo is an optional extra: the base install never pulls it (docs/agentdojo.md).
    agentdojo = [r for r in requires if r.startswith("agentdojo")]
    assert agentdojo and all('extra == "agentdojo"' in r for r in agentdojo)


@pytest.mark.slow
def test_description_links_work_on_an_index_page(dists: tuple[Path, Path]) -> None:
    meta = _wheel_metadata(dists[1])
    assert meta["Description-Content-Type"] == "text/markdown"
    description = meta.get_payload()
    assert isinstance(description, str) and "probegate" in description
    assert RELATIVE_LINK.findall(description) == []
    # The links that point into the repository resolve to files that exist in it.
    for target in re.findall(rf"\]\({re.escape(REPO_URL)}/blob/main/([^)#\s]+)", description):
        assert (ROOT / target).exists(), target


def test_readme_links_are_absolute() -> None:
    """The README is the package description: a relative link in it is dead on an index."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert RELATIVE_LINK.findall(readme) == []
