"""The report formats are listed once (reports.FORMATS); every other list of them follows it.

The ``--output`` help of each command, the formats table of docs/report-format.md, the
README's table and its sentence on what a scan writes, the Makefile's ``demo`` line, the
``formats`` input of action.yml and its row in docs/github-action.md are checked against the
registry here; the golden-file table is derived from it
(test_golden.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from probegate.cli import main
from probegate.errors import UsageError
from probegate.reports import FORMATS, FormatName, emitter, formats_help, parse_formats

ROOT = Path(__file__).resolve().parents[2]
REPORTS = ROOT / "src" / "probegate" / "reports"


def _table(path: Path, header: str) -> list[list[str]]:
    """The rows of the Markdown table whose header line starts with ``header``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_the_report_format_docs_table_is_the_registry() -> None:
    rows = _table(ROOT / "docs" / "report-format.md", "| `--output` | file | module | for |")
    assert [(r[0], r[1], r[3]) for r in rows] == [
        (f"`{f.name}`", f"`{f.filename}`", f.purpose) for f in FORMATS.values()
    ]
    for row, name in zip(rows, FORMATS, strict=True):  # the module cell names the emitter's
        module = row[2].strip("`")
        assert (REPORTS / module).exists(), module
        dispatched = emitter(name).__module__.removeprefix("probegate.reports.")
        assert module in (f"{dispatched}.py", f"{dispatched}/"), (module, dispatched)


def test_every_format_name_is_one_registry_line_and_keeps_its_value() -> None:
    """``--output`` names are a contract (PRODUCT.md): the enum, its values and the registry's
    keys are one list, in the registry's order."""
    assert list(FORMATS) == list(FormatName)
    assert all(FORMATS[name].name is name for name in FormatName)
    assert [str(name) for name in FormatName] == ["json", "sarif", "junit", "md", "html", "pdf"]
    assert parse_formats(["md,JSON", "md"]) == [FormatName.MD, FormatName.JSON]


def test_the_readme_table_is_the_registry() -> None:
    rows = _table(ROOT / "README.md", "| format | file | for |")
    assert [(r[0], r[1]) for r in rows] == [
        (f"`{f.name}`", f"`{f.filename}`") for f in FORMATS.values()
    ]


_NUMBERS = {4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


def test_the_readme_sentence_on_what_a_scan_writes_is_the_registry() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = " ".join(readme.split("A scan writes ", 1)[1].split("The journal", 1)[0].split())
    assert re.findall(r"`([\w./-]+\.\w+)`", sentence.split(" when asked", 1)[0]) == [
        f"probegate-out/{FORMATS['json'].filename}",
        *(f.filename for f in FORMATS.values() if f.name != "json"),
    ]
    asked = re.search(r"`--output ([\w,]+)`", sentence)
    assert asked is not None, sentence
    assert asked.group(1).split(",") == list(FORMATS)
    assert f"(all {_NUMBERS[len(FORMATS)]} formats)" in readme


def test_make_demo_writes_every_format_of_the_registry() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert recipe.split("--output ", 1)[1].split()[0].split(",") == list(FORMATS)


def test_the_action_lists_the_registry() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    description = action["inputs"]["formats"]["description"]
    listed = re.search(r"comma separated: (.*?) \(scan\)", description)
    assert listed is not None, description
    assert listed.group(1).split(", ") == list(FORMATS)
    rows = _table(ROOT / "docs" / "github-action.md", "| input | default | meaning |")
    (formats_row,) = [r for r in rows if r[0] == "`formats`"]
    named = re.search(r"any of (.*?), comma separated", formats_row[2])
    assert named is not None, formats_row
    assert re.findall(r"`(\w+)`", named.group(1)) == list(FORMATS)


@pytest.mark.parametrize("command", ["scan", "report", "merge"])
def test_every_output_flag_offers_the_registry(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert " ".join(formats_help().split()) in help_text
    for fmt in FORMATS.values():
        assert f"{fmt.name} ({fmt.filename})" in help_text


def test_an_unknown_format_names_the_registry() -> None:
    with pytest.raises(UsageError) as caught:
        parse_formats(["json,docx"])
    assert caught.value.message.endswith(f"(choose from {', '.join(FORMATS)})")
