"""A skip for missing reference material tells a new user what it is and how to get it.

A fresh checkout has no ``../shared/reference/``; the skip reasons that named only that path
left a reader with a directory they had never heard of.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tests.reference as reference

TESTS = Path(__file__).resolve().parents[1]


def test_every_reference_a_test_reads_is_described() -> None:
    used = set()
    for path in TESTS.rglob("*.py"):
        for match in re.finditer(r"reference_path\(\s*\"([^\"]+)\"", path.read_text("utf-8")):
            used.add(match.group(1))
    assert used and used <= set(reference.MATERIAL), used - set(reference.MATERIAL)


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        (("junit", "junit-10.xsd"), ("JUnit XML schema", "pip download", "pytest==9.2.0")),
        (("codeql-action", "check_fingerprints.sh"), ("fingerprinting", "v3.28.18")),
    ],
)
def test_a_missing_reference_says_what_it_is_and_where_it_comes_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: tuple[str, ...], words: tuple[str, ...]
) -> None:
    # A relative checkout inside an empty directory: its parents are that directory alone, so no
    # shared/ laid anywhere on this machine (a /tmp/shared, say) is found by the search upwards.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(reference, "ROOT", Path("a") / "checkout")
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        reference.reference_path(*parts)
    said = str(skipped.value)
    assert all(word in said for word in words), said
    assert f"../shared/reference/{'/'.join(parts)}" in said and "beside the checkout" in said
