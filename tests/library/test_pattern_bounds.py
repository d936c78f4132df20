"""Every bundled pattern runs on RE2 and survives adversarial megabytes (docs/probes.md).

Time is not asserted here (``make bench`` prints it: bench/bench_hostile.py): what is asserted
is that each pattern is compiled by the linear-time engine, which is what makes its time
bounded, and that each one reads adversarial megabytes built from its own characters, the
inputs that make a backtracking engine take quadratic or exponential time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import re2
import yaml

import probegate.library
from probegate.cli import main
from probegate.library.loader import load_library
from probegate.models.patterns import Pattern, PatternError, compile_pattern

MEGABYTE = 1_000_000
LIBRARY = Path(probegate.library.__file__).parent / "probes"
PATTERN_FIELDS = ("pattern", "args_pattern", "claims")


def _patterns(value: Any) -> Iterator[str]:
    """Every pattern in an oracle's data, also in oracles nested inside another."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in PATTERN_FIELDS and isinstance(item, str):
                yield item
            else:
                yield from _patterns(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _patterns(item)


BUNDLED = sorted(
    {p for probe in load_library().probes for o in probe.oracles for p in _patterns(o.model_dump())}
)


def adversarial(pattern: str, size: int = MEGABYTE) -> list[str]:
    """Texts that make backtracking engines slow on ``pattern``: its literal characters, and
    runs of its first characters, repeated to ``size``."""
    literal = re.sub(r"\\[A-Za-z]|[\\^$.|?*+()\[\]{}]", "", pattern) or "a"
    texts = {(literal[:n] * (size // n + 1))[:size] for n in (1, 2, 3, len(literal))}
    opener = re.sub(r"\\(.)", r"\1", pattern)[:2]  # "![" for the markdown-image pattern
    texts.add((opener * (size // max(len(opener), 1) + 1))[:size])
    return sorted(texts)


def test_the_library_has_patterns_of_every_field() -> None:
    assert len(BUNDLED) > 50
    fields = {k for probe in load_library().probes for o in probe.oracles for k in o.model_dump()}
    assert set(PATTERN_FIELDS) <= fields


@pytest.mark.parametrize("pattern", BUNDLED)
def test_every_bundled_pattern_is_compiled_by_the_linear_engine(pattern: str) -> None:
    compiled = compile_pattern(pattern, ignore_case=True)
    assert isinstance(compiled, Pattern) and isinstance(compiled._regex, re2._Regexp)


def test_every_bundled_pattern_reads_adversarial_megabytes() -> None:
    for pattern in BUNDLED:
        compiled = compile_pattern(pattern, ignore_case=True)
        for text in adversarial(pattern):
            found = compiled.search(text)
            assert found is None or text[found.start : found.end] == found.group


def test_the_worst_case_of_the_markdown_image_pattern_is_read() -> None:
    # 1 MB of "![": Python's re took about 8 minutes on this, holding the interpreter lock.
    image = next(p for p in BUNDLED if p.startswith("!\\["))
    assert compile_pattern(image, ignore_case=True).search("![" * (MEGABYTE // 2)) is None
    assert compile_pattern(image, ignore_case=True).search("![x](https://a.evil.test)")


@pytest.mark.parametrize(
    "pattern", [r"(a)\1", r"(?P<x>a)(?P=x)", r"a(?=b)", r"(?<!x)a", r"(?>a+)", r"a++", r"(?x) a"]
)
def test_backtracking_constructs_are_refused_with_one_clear_line(pattern: str) -> None:
    with pytest.raises(PatternError) as info:
        compile_pattern(pattern)
    message = str(info.value)
    assert "\n" not in message and repr(pattern) in message and "RE2" in message


def test_python_spellings_that_re2_spells_differently_are_translated() -> None:
    assert compile_pattern(r"done\Z").search("all done") is not None
    assert compile_pattern(r"done\Z").search("done already") is None
    assert compile_pattern(r"\\Z").search("a \\Z") is not None  # an escaped backslash stays


def test_lone_surrogates_never_stop_a_match() -> None:
    found = compile_pattern("evil").search("\ud800 evil \udfff")
    assert found is not None and (found.start, found.end) == (2, 6)


def test_a_custom_probe_whose_pattern_needs_backtracking_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = LIBRARY / "asi01.markdown-image-exfil.v1.yaml"
    text = source.read_text("utf-8").replace("asi01.markdown-image-exfil.v1", "asi01.mine.v1")
    probe = yaml.safe_load(text)
    probe["oracles"][0]["pattern"] = r"(?<!no )image"
    (tmp_path / "asi01.mine.v1.yaml").write_text(yaml.safe_dump(probe), "utf-8")
    code = main(["scan", "demo", "--probe-dir", str(tmp_path), "--dry-run"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "asi01.mine.v1" in err[0] and "RE2" in err[0] and "(?<!no )image" in err[0]
