"""docs/probes.md is generated from the library and must never drift from it."""

from __future__ import annotations

from pathlib import Path

from probegate.library.docs import ORACLE_KINDS, main, render_probe_docs
from probegate.library.loader import load_library
from probegate.library.mutators import MUTATORS
from probegate.library.oracles import ORACLE_KINDS as REGISTRY

DOCS = Path(__file__).resolve().parents[2] / "docs" / "probes.md"


def test_docs_probes_md_is_up_to_date() -> None:
    expected = render_probe_docs(load_library())
    assert DOCS.read_text(encoding="utf-8") == expected, (
        "docs/probes.md is out of date: run .venv/bin/python -m probegate.library.docs"
    )


def test_every_probe_has_a_section_anchored_by_its_id() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for probe in load_library().probes:
        assert f'<a id="{probe.id}"></a>' in text
        assert f"### `{probe.id}`" in text
        assert probe.remediation.split(";")[0][:40] in text


def test_every_mutator_and_oracle_kind_is_documented() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert list(ORACLE_KINDS) == list(REGISTRY)
    for name in [*MUTATORS, *ORACLE_KINDS]:
        assert f"`{name}`" in text


def test_docs_show_hidden_characters_instead_of_hiding_them() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert "\u200b" not in text and not any(0xE0000 <= ord(c) <= 0xE007F for c in text)
    assert "[invisible Unicode tags:" in text


def test_check_mode_reports_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "probes.md"
    stale.write_text("# old\n", encoding="utf-8")
    assert main([str(stale), "--check"]) == 1
    assert main([str(stale)]) == 0
    assert main([str(stale), "--check"]) == 0
