"""Loading probe files: one clear error per malformed file, a version that tracks content."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from probegate.errors import ProbeLibraryError
from probegate.library.loader import PROBES_DIR, load_atlas, load_directory, load_library

SOURCE = PROBES_DIR / "asi01.direct-system-prompt-leak.v1.yaml"


def _copy(tmp_path: Path, name: str = SOURCE.name, text: str | None = None) -> Path:
    path = tmp_path / name
    path.write_text(SOURCE.read_text(encoding="utf-8") if text is None else text, "utf-8")
    return path


def _edited(**changes: object) -> str:
    data = yaml.safe_load(SOURCE.read_text(encoding="utf-8"))
    data.update(changes)
    return yaml.safe_dump(data, sort_keys=False)


def test_a_valid_file_loads(tmp_path: Path) -> None:
    _copy(tmp_path)
    lib = load_directory(tmp_path)
    assert [p.id for p in lib.probes] == ["asi01.direct-system-prompt-leak.v1"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id: [unclosed\n", "invalid YAML"),
        ("- just\n- a list\n", "expected a mapping"),
        (_edited(asi="ASI11"), "asi: unknown ASI category"),
        (_edited(owasp_llm=["LLM11"]), "unknown OWASP LLM id"),
        (_edited(mitre_atlas=["T1059"]), "is not a MITRE ATLAS technique id"),
        (_edited(csa_category="goal-instruction-manipulation"), "unknown CSA category"),
        (_edited(severity="urgent"), "severity"),
        (_edited(channel="email"), "channel"),
        (_edited(oracles=[{"kind": "tool_call", "args_pattern": "("}]), "regular expression"),
        (_edited(oracles=[{"kind": "no_action"}]), "no_action needs expect_tool"),
        (_edited(oracles=[]), "oracles"),
        (_edited(surprise="field"), "surprise: unknown field"),
        (_edited(id="ASI01.Bad Id"), "must look like asi01.short-name.v1"),
    ],
)
def test_a_malformed_file_is_one_error_naming_the_file(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _copy(tmp_path, text=text)
    with pytest.raises(ProbeLibraryError) as err:
        load_directory(tmp_path)
    assert str(path) in err.value.message
    assert message in err.value.message
    assert "\n" not in err.value.message


def test_file_name_must_be_the_id(tmp_path: Path) -> None:
    _copy(tmp_path, name="asi01.other-name.v1.yaml")
    with pytest.raises(ProbeLibraryError, match="file name must be the probe id"):
        load_directory(tmp_path)


def test_an_empty_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ProbeLibraryError, match="no probe files"):
        load_directory(tmp_path)


def test_version_changes_with_any_byte_of_any_probe(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    before = load_directory(tmp_path).version
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    after = load_directory(tmp_path).version
    assert before != after
    assert before.split("+")[0] == after.split("+")[0]


def test_select_by_asi_and_glob() -> None:
    lib = load_library()
    asi03 = lib.select(asi=["asi03"])
    assert asi03 and all(p.asi == "ASI03" for p in asi03)
    one = lib.select(patterns=["asi01.direct-*"])
    assert [p.id for p in one] == ["asi01.direct-system-prompt-leak.v1"]
    assert lib.select(asi=["ASI03"], patterns=["asi01.*"]) == []


def test_unknown_id_is_a_usage_error_with_a_hint() -> None:
    with pytest.raises(ProbeLibraryError, match="probegate probes list") as err:
        load_library().get("asi01.nope.v1")
    assert err.value.exit_code == 2


def test_atlas_titles_compose_sub_techniques() -> None:
    atlas = load_atlas()
    assert atlas.techniques["AML.T0051.001"] == "LLM Prompt Injection: Indirect"
    assert atlas.techniques["AML.T0053"] == "AI Agent Tool Invocation"
    assert atlas.techniques["AML.T0056"] == "Extract LLM System Prompt"
