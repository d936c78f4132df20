"""SARIF: OASIS-schema validity, GitHub's ingestion rules, and the emitter's contracts."""

from __future__ import annotations

import copy
import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any

import attr
import jsonschema
import pytest
import sarif_om as om
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probegate import PROJECT_URL
from probegate.errors import ReportError
from probegate.models.probe import stable_id
from probegate.models.report import SourceLocation, Suppression
from probegate.models.taxonomy import Severity
from probegate.reports import sarif
from probegate.reports.sarif import omjson, results, rules, schema
from probegate.reports.sarif.log import SCHEMA_URI
from tests.factories import make_finding, make_report
from tests.reports.samples import golden_report


def _doc() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(sarif.render(golden_report()))
    return data


def test_valid_against_the_oasis_schema_with_plain_jsonschema() -> None:
    doc = _doc()
    assert list(jsonschema.Draft4Validator(schema.sarif_schema()).iter_errors(doc)) == []
    assert list(schema.sarif_validator().iter_errors(doc)) == []
    # Draft4Validator, with only uniqueItems (linear) and items (one item per shape) swapped
    validator_class = type(schema.sarif_validator())
    draft4 = jsonschema.Draft4Validator
    assert validator_class.META_SCHEMA == draft4.META_SCHEMA
    changed = {
        k for k, v in validator_class.VALIDATORS.items() if draft4.VALIDATORS.get(k) is not v
    }
    assert changed == {"uniqueItems", "items"}


def test_run_shape() -> None:
    doc = _doc()
    assert doc["version"] == "2.1.0"
    assert doc["$schema"] == SCHEMA_URI
    (run,) = doc["runs"]
    assert run["tool"]["driver"]["name"] == "probegate"
    assert run["tool"]["driver"]["informationUri"] == PROJECT_URL
    assert isinstance(run["invocations"], list) and run["invocations"][0]["executionSuccessful"]
    assert "automationDetails" not in run
    props = run["properties"]
    report = golden_report()
    assert props["aivss"] == report.aivss
    assert props["band"] == report.band
    assert props["tier"] == report.tier
    assert props["asi_scores"] == report.asi_scores
    assert props["aivss_formula_version"] == report.aivss_formula_version
    assert props["probe_library_version"] == report.probe_library_version


def test_one_rule_per_probe_one_result_per_finding() -> None:
    report = golden_report()
    run = _doc()["runs"][0]
    rule_list = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rule_list] == sorted({stable_id(f.probe_id) for f in report.findings})
    assert len(run["results"]) == len(report.findings)
    for finding, result in zip(report.findings, run["results"], strict=True):
        assert rule_list[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["properties"]["probe_id"] == finding.probe_id


def test_the_rule_id_survives_a_new_probe_version() -> None:
    """Bumping a probe to .v2 keeps its alert: the rule id is the probe id without .vN."""
    v1 = make_report([make_finding(0, probe_id="asi01.leak.v1")])
    v2 = make_report([make_finding(0, probe_id="asi01.leak.v2")])
    (rule_v1,) = json.loads(sarif.render(v1))["runs"][0]["tool"]["driver"]["rules"]
    (rule_v2,) = json.loads(sarif.render(v2))["runs"][0]["tool"]["driver"]["rules"]
    assert rule_v1["id"] == rule_v2["id"] == "asi01.leak"
    assert rule_v2["properties"]["probe_id"] == "asi01.leak.v2"
    both = make_report(
        [make_finding(0, probe_id="asi01.leak.v1"), make_finding(1, probe_id="asi01.leak.v2")]
    )
    run = json.loads(sarif.render(both))["runs"][0]
    (rule,) = run["tool"]["driver"]["rules"]
    assert rule["properties"]["probe_id"] == "asi01.leak.v2"  # the newest version describes it
    assert [r["ruleId"] for r in run["results"]] == ["asi01.leak", "asi01.leak"]


def test_help_uri_points_at_the_probe_docs_anchor() -> None:
    for rule in _doc()["runs"][0]["tool"]["driver"]["rules"]:
        assert rule["helpUri"] == f"{PROJECT_URL}/blob/main/docs/probes.md#{rule['id']}"


def test_rules_carry_what_github_needs() -> None:
    for rule in _doc()["runs"][0]["tool"]["driver"]["rules"]:
        assert 0 < len(rule["shortDescription"]["text"]) <= 1024
        assert 0 < len(rule["fullDescription"]["text"]) <= 1024
        assert rule["help"]["text"] and rule["help"]["markdown"]
        props = rule["properties"]
        tags = props["tags"]
        assert tags[0] == "security" and len(tags) <= 10 and len(set(tags)) == len(tags)
        assert any(t.startswith("owasp-agentic/asi") for t in tags)
        assert any(t.startswith("csa/") for t in tags)
        severity = float(props["security-severity"])
        assert 0.0 <= severity <= 10.0 and props["security-severity"] == f"{severity:.1f}"


def test_levels_follow_severity() -> None:
    levels = {
        Severity.CRITICAL: "error",
        Severity.HIGH: "error",
        Severity.MEDIUM: "warning",
        Severity.LOW: "note",
    }
    report = make_report([make_finding(i, severity=s) for i, s in enumerate(levels)])
    run = json.loads(sarif.render(report))["runs"][0]
    by_rule = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    for finding, result in zip(report.findings, run["results"], strict=True):
        assert result["level"] == levels[finding.severity]  # written even when "warning"
        assert by_rule[result["ruleId"]]["defaultConfiguration"]["level"] == result["level"]


def test_rule_severity_is_the_worst_of_its_findings() -> None:
    a = make_finding(0, probe_id="asi01.same.v1").model_copy(update={"aivss_severity": 4.25})
    b = make_finding(1, probe_id="asi01.same.v1").model_copy(update={"aivss_severity": 7.94})
    run = json.loads(sarif.render(make_report([a, b])))["runs"][0]
    (rule,) = run["tool"]["driver"]["rules"]
    assert rule["properties"]["security-severity"] == "7.9"


def test_many_findings_on_one_line_keep_distinct_fingerprints() -> None:
    """probegate's own key, the finding's fp; primaryLocationLineHash is upload-sarif's to set
    (it recomputes it from the file and warns about any other value)."""
    findings = [make_finding(i) for i in range(5)]
    run = json.loads(sarif.render(make_report(findings)))["runs"][0]
    locations = {json.dumps(r["locations"]) for r in run["results"]}
    assert len(locations) == 1  # all on probegate.yml:1
    keys = [r["partialFingerprints"][results.FINGERPRINT_KEY] for r in run["results"]]
    assert keys == [f.fp for f in findings] and len(set(keys)) == len(keys)
    for result in run["results"]:
        assert set(result["partialFingerprints"]) == {results.FINGERPRINT_KEY}


def test_results_have_repo_relative_file_locations() -> None:
    finding = make_finding(0).model_copy(
        update={"location": SourceLocation(path="./agents/my agent:v2/probegate.yml", line=7)}
    )
    (result,) = json.loads(sarif.render(make_report([finding])))["runs"][0]["results"]
    (location,) = result["locations"]
    physical = location["physicalLocation"]
    assert physical["artifactLocation"]["uri"] == "agents/my%20agent%3Av2/probegate.yml"
    assert physical["region"]["startLine"] == 7


@pytest.mark.parametrize(
    "path", ["", "/etc/probegate.yml", "../outside.yml", "https://x/y.yml", "C:/agent.yml", "a:b"]
)
def test_a_location_github_would_reject_is_a_report_error(path: str) -> None:
    finding = make_finding(0).model_copy(update={"location": SourceLocation(path=path)})
    with pytest.raises(ReportError, match="repo-relative"):
        sarif.render(make_report([finding]))


def test_suppressed_findings_become_sarif_suppressions() -> None:
    report = golden_report()
    run = _doc()["runs"][0]
    for finding, result in zip(report.findings, run["results"], strict=True):
        if finding.suppressed is None:
            assert "suppressions" not in result
        else:
            (suppression,) = result["suppressions"]
            assert suppression["kind"] == "external"
            assert suppression["justification"] == finding.suppressed.reason
            assert suppression["properties"] == {"expires": finding.suppressed.expires}


def test_result_properties_are_the_documented_ones() -> None:
    report = golden_report()
    result = _doc()["runs"][0]["results"][0]
    finding = report.findings[0]
    props = result["properties"]
    assert props["aivss_severity"] == finding.severity.value
    assert props["asi"] == finding.asi
    assert props["mitre_atlas"] == finding.mitre_atlas
    assert props["csa"] == finding.csa_category
    assert props["confidence"] == finding.confidence
    assert props["success"] is finding.success
    assert props["attempt_count"] == finding.attempt_count
    assert props["finding_id"] == finding.id
    assert props["pov_reliability"] == finding.pov_reliability
    assert "pov_reference" not in props  # omitted when null
    assert result["message"]["text"].startswith(finding.summary)


def _nulls(value: Any, path: str = "") -> list[str]:
    if value is None:
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _nulls(v, f"{path}/{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _nulls(v, f"{path}/{i}")]
    return []


def test_an_unset_field_is_left_out_never_written_as_null() -> None:
    """Rules and results are written as plain dicts, not through omjson.node and plain: an
    optional field left unset (no reproducer, no control, no expiry) is left out as they
    would leave it; SARIF's null is never a value of these properties."""
    bare = make_finding(0).model_copy(
        update={"pov_reference": None, "pov_reliability": None, "control": None}
    )
    suppressed = make_finding(1).model_copy(update={"suppressed": Suppression(reason="ok")})
    document = json.loads(sarif.render(make_report([bare, suppressed])))
    assert _nulls(document) == []
    first = document["runs"][0]["results"][0]
    assert {"pov_reference", "pov_reliability", "control"}.isdisjoint(first["properties"])
    assert "properties" not in document["runs"][0]["results"][1]["suppressions"][0]


def test_message_text_escapes_embedded_link_syntax() -> None:
    finding = make_finding(0).model_copy(update={"summary": "see [here](0) \\o/"})
    (result,) = json.loads(sarif.render(make_report([finding])))["runs"][0]["results"]
    assert result["message"]["text"] == "see \\[here\\](0) \\\\o/."


def test_node_uses_schema_names_and_drops_defaults() -> None:
    location = omjson.node(
        "Location",
        physical_location=omjson.node("PhysicalLocation", region=omjson.node("Region")),
    )
    result = omjson.node(
        "Result",
        message=omjson.node("Message", text="x"),
        rule_id="r",
        level="warning",
        kind="fail",  # the schema default: left out
        rank=-1.0,  # the same
        guid=None,
        locations=[location],
    )
    assert result == {
        "message": {"text": "x"},
        "ruleId": "r",
        "level": "warning",  # kept: a missing level would inherit the rule's
        "locations": [{"physicalLocation": {"region": {}}}],
    }
    tool = omjson.node("Tool", driver=omjson.node("ToolComponent", name="t", language="en-US"))
    assert omjson.node("Run", tool=tool) == {"tool": {"driver": {"name": "t"}}}
    with pytest.raises(TypeError, match="rule_idx"):
        omjson.node("Result", rule_idx=1)
    with pytest.raises(TypeError, match="Resultt"):
        omjson.node("Resultt", rule_id="r")


def _om_fields(cls: type) -> dict[str, dict[str, Any]]:
    """What sarif-om says of one class: each attribute's schema name, and the defaults that
    are not None (a factory's value)."""
    names: dict[str, str] = {}
    defaults: dict[str, Any] = {}
    for field in attr.fields(cls):
        names[field.name] = field.metadata["schema_property_name"]
        default = field.default
        if isinstance(default, attr.Factory):  # type: ignore[arg-type]
            default = default.factory()
        if default is not None and default is not attr.NOTHING:
            defaults[field.name] = default
    return {"names": names, "defaults": defaults}


def test_the_bundled_names_and_defaults_are_sarif_oms() -> None:
    """omjson reads sarif-om's names and defaults from a file (importing sarif-om took 40-60
    ms of every render): the file holds every class the emitter writes, as sarif-om says."""
    path = Path(str(resources.files("probegate.reports").joinpath(omjson.FIELDS_FILE)))
    written = set(re.findall(r'\bnode\(\s*"(\w+)"', _emitter_source()))
    classes = sorted(written | {"Message", "Result"})  # the two written as plain dicts
    want = {name: _om_fields(getattr(om, name)) for name in classes}
    if os.environ.get("PROBEGATE_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(want, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8")) == want, (
        f"{path} differs from sarif-om (PROBEGATE_UPDATE_GOLDEN=1 to rewrite it)"
    )


def _emitter_source() -> str:
    folder = Path(str(resources.files("probegate.reports").joinpath("sarif")))
    return "".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.py")))


def test_property_bags_drop_nulls_and_refuse_what_json_cannot_hold() -> None:
    bag = {"a": None, "b": {"c": None, "d": (1, "x")}, "e": [{"f": None}]}
    assert omjson.plain(bag) == {"b": {"d": [1, "x"]}, "e": [{}]}
    with pytest.raises(ReportError, match="Severity"):
        omjson.plain({"severity": Severity.HIGH})


def test_invalid_document_raises_report_error_naming_the_place() -> None:
    doc = _doc()
    doc["runs"][0]["results"][1]["level"] = "fatal"
    with pytest.raises(ReportError, match=r"runs/0/results/1/level"):
        schema.validate(doc)


def test_large_documents_are_validated_too() -> None:
    report = make_report([make_finding(i) for i in range(600)])  # 1200 results + rules
    doc = json.loads(sarif.render(report))
    schema.validate(doc)
    doc["runs"][0]["results"][599]["ruleIndex"] = -5
    with pytest.raises(ReportError, match=r"results/599/ruleIndex"):
        schema.validate(doc)
    doc["runs"][0]["results"][599]["ruleIndex"] = 599
    doc["runs"][0]["tool"]["driver"]["rules"].append(doc["runs"][0]["tool"]["driver"]["rules"][0])
    with pytest.raises(ReportError, match="non-unique"):
        schema.validate(doc)


def test_an_item_is_skipped_only_when_its_shape_was_checked() -> None:
    """Later items are not checked when an earlier one had their shape; any difference the
    schema can see (a pattern, an enum, a bound, a duplicate) makes a new shape."""
    doc = json.loads(sarif.render(make_report([make_finding(i) for i in range(3)])))
    bad: list[tuple[str, Any]] = [
        ("guid", "not-a-guid"),  # a pattern
        ("level", "fatal"),  # an enum
        ("rank", 101.0),  # a bound
        ("kind", ["x"]),  # a type
    ]
    for key, value in bad:
        copy_ = copy.deepcopy(doc)
        copy_["runs"][0]["results"][2][key] = value
        with pytest.raises(ReportError, match=rf"results/2/{key}"):
            schema.validate(copy_)
    copy_ = copy.deepcopy(doc)
    tags = copy_["runs"][0]["tool"]["driver"]["rules"][2]["properties"]["tags"]
    tags.append(tags[-1])
    with pytest.raises(ReportError, match="non-unique"):
        schema.validate(copy_)


@pytest.mark.parametrize(
    ("where", "tags"),
    [
        ("results", "security"),  # not an array
        ("results", ["security", 3]),  # an item not a string
        ("results", ["a", "a"]),  # not unique
        ("rules", ["security", None]),
        ("rules", {"0": "security"}),
    ],
)
def test_a_bad_tags_in_a_later_items_property_bag_still_fails(where: str, tags: Any) -> None:
    """Property bags are shaped by their ``tags`` alone (the one entry the schema declares): a
    bad ``tags`` in an item whose other entries match an earlier valid item is still caught."""
    doc = json.loads(sarif.render(make_report([make_finding(i) for i in range(5)])))
    run = doc["runs"][0]
    items = run["results"] if where == "results" else run["tool"]["driver"]["rules"]
    shapes = schema.Shapes(schema.sarif_schema())
    bags = shapes.bags(
        {"$ref": f"#/definitions/{'result' if where == 'results' else 'reportingDescriptor'}"}
    )
    assert shapes.item(items[4], bags, {}) == shapes.item(items[3], bags, {})  # 4 is skipped
    items[4]["properties"]["tags"] = tags
    with pytest.raises(ReportError, match=rf"{where}/4/properties/tags"):
        schema.validate(doc)


def test_only_undeclared_bag_entries_leave_the_shape() -> None:
    """Entries other than ``tags`` do not change an item's shape; a bag schema that could
    reject one of them (``required``, closed, or not a plain object) is shaped in full."""
    shapes = schema.Shapes(schema.sarif_schema())
    assert shapes.bags({"$ref": "#/definitions/result"}) == {"properties": frozenset({"tags"})}
    one = {"level": "error", "properties": {"tags": ["a"], "x": [1, {"y": "z"}]}}
    other = {"level": "error", "properties": {"tags": ["b"], "x": "anything"}}
    bags = shapes.bags({"$ref": "#/definitions/result"})
    assert shapes.item(one, bags, {}) == shapes.item(other, bags, {})
    assert shapes.item(one, {}, {}) != shapes.item(other, {}, {})
    for bag in (
        {"type": "object", "required": ["x"]},
        {"type": "object", "additionalProperties": False},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": ["object", "null"]},
        {"$ref": "#/definitions/b", "type": "string"},
    ):
        custom = schema.Shapes({"definitions": {"b": {"type": "object"}}, "properties": {"p": bag}})
        assert custom.bags({"properties": {"p": bag}}) == {}, bag


def test_unique_items_agrees_with_json_equality() -> None:
    assert not schema.items_unique([{"a": 1}, {"a": 1.0}])
    assert schema.items_unique([{"a": 1}, {"a": True}])
    assert schema.items_unique([[1, 2], [2, 1]])
    assert not schema.items_unique([{"a": [1, {"b": "x"}]}, {"a": [1, {"b": "x"}]}])
    assert not schema.items_unique(["x", "x"])


# --- the validator agrees with plain jsonschema ---------------------------------------------

_VALUES = st.one_of(
    st.sampled_from(
        ["error", "warning", "note", "none", "fail", "external", "", "ASI01", "2.1.0", "%SRC%"]
    ),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([1.0, 0.5, -1.5, 101.0, True, False, None]),
    st.builds(list),
    st.builds(dict),
    st.builds(lambda: ["a", "a"]),
    st.builds(lambda: {"text": "x"}),
    st.sampled_from(["7f1c1a8e-3b5d-4c1e-9a2b-0c3d4e5f6a7b", "text/plain", "1.2.3.4", "en-US"]),
)


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*path, i))
    return out


# Three findings: later results and rules share their shape with the first, so a mutation of
# one of them is what the shape check must notice.
_BASE = json.loads(sarif.render(make_report([make_finding(i) for i in range(3)])))
_BASE["runs"][0]["results"][1]["suppressions"] = [{"kind": "external", "justification": "ok"}]
_BASE["runs"][0]["results"][2]["guid"] = "7f1c1a8e-3b5d-4c1e-9a2b-0c3d4e5f6a7b"
_PLAIN = jsonschema.Draft4Validator(schema.sarif_schema())
_ALL_PATHS = _paths(_BASE)[1:]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
@pytest.mark.slow
def test_validator_agrees_with_plain_jsonschema(data: st.DataObject) -> None:
    doc = copy.deepcopy(_BASE)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        path = data.draw(st.sampled_from(_ALL_PATHS))
        parent: Any = doc
        try:
            for part in path[:-1]:
                parent = parent[part]
            key = path[-1]
            action = data.draw(st.sampled_from(["set", "delete", "add", "duplicate"]))
            if action == "set":
                parent[key] = data.draw(_VALUES)
            elif action == "delete":
                del parent[key]
            elif action == "add" and isinstance(parent[key], dict):
                parent[key][data.draw(st.sampled_from(["bogus", "text", "level", "id"]))] = (
                    data.draw(_VALUES)
                )
            elif action == "duplicate" and isinstance(parent[key], list) and parent[key]:
                parent[key].append(copy.deepcopy(parent[key][0]))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed this path
    expected = _PLAIN.is_valid(doc)
    try:
        schema.validate(doc)
    except ReportError:
        assert not expected
    else:
        assert expected


def test_shapes_refuse_keywords_they_do_not_account_for() -> None:
    with pytest.raises(NotImplementedError, match="minLength"):
        schema.Shapes({"properties": {"a": {"minLength": 3}}})


def test_suppressed_finding_keeps_its_result() -> None:
    finding = make_finding(0).model_copy(update={"suppressed": Suppression(reason="ok")})
    (result,) = json.loads(sarif.render(make_report([finding])))["runs"][0]["results"]
    assert result["suppressions"] == [{"kind": "external", "justification": "ok"}]


def test_a_finding_without_summary_names_itself_as_plain_text() -> None:
    # A stored report's name is untrusted too: "[x](1)" must not become an embedded link.
    finding = make_finding(0).model_copy(update={"summary": "", "name": "[x](1) \x1b[2J"})
    data = json.loads(sarif.render(make_report([finding])))
    text = data["runs"][0]["results"][0]["message"]["text"]
    assert text.startswith("\\[x\\](1)  succeeded against the agent"), text
    assert "\x1b" not in text


def test_a_shared_list_is_shaped_again_under_a_key_with_patterns() -> None:
    """The builder shares lists (a rule's tags), and a list is shaped once per document only
    under keys where no pattern applies: the same list under ``deprecatedGuids`` (a guid
    pattern) is shaped for that key, so a bad guid in a later rule is still checked."""
    doc = _doc()
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    good = ["7f1c1a8e-3b5d-4c1e-9a2b-0c3d4e5f6a7b"]
    bad = ["not-a-guid"]
    rules[1] = {**rules[0], "id": "another-rule"}  # alike in everything the schema can see
    for rule, guids in ((rules[0], good), (rules[1], bad)):
        rule["properties"] = {"tags": guids}  # shaped first, under a key without patterns
        rule["deprecatedGuids"] = guids  # the very same list, where the pattern applies
    with pytest.raises(ReportError, match=r"rules/1/deprecatedGuids/0"):
        schema.validate(doc)


_PARTS = st.text(alphabet=st.sampled_from("ab _:.[]\\\x1b\x07\x9b\u202e\r\n\t(1)"), max_size=12)


@settings(max_examples=200, deadline=None)
@given(
    name=_PARTS,
    remediation=_PARTS,
    channel=_PARTS,
    probe_id=_PARTS,
    asi=st.sampled_from(["ASI01", "ASI0[2]", "AS\x1bI"]),
    csa=_PARTS,
    llm=st.lists(_PARTS, max_size=2),
)
def test_rule_texts_read_by_their_parts_are_sarif_text_of_the_whole(
    name: str,
    remediation: str,
    channel: str,
    probe_id: str,
    asi: str,
    csa: str,
    llm: list[str],
) -> None:
    """A rule's description and help are read by sarif_text part by part when every part is
    plain (rules._plain); with hostile parts they are still what sarif_text of the whole
    text makes, as when no part is trusted."""
    finding = make_finding(0).model_copy(
        update={
            "name": name,
            "remediation": remediation,
            "channel": channel,
            "probe_id": probe_id + ".v1",
            "asi": asi,
            "csa_category": csa,
            "owasp_llm": llm,
        }
    )
    fast = rules.rule("r", [finding], omjson.Shared())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rules, "_plain", lambda escaped, text: False)
        rules._mapping.cache_clear()
        whole = rules.rule("r", [finding], omjson.Shared())
    rules._mapping.cache_clear()
    assert fast == whole


def test_the_streamed_log_is_the_log_built_whole_byte_for_byte() -> None:
    """Rules and results are written one at a time: the bytes are those of the whole log,
    terminal-unsafe characters in a finding's text escaped in the one as in the other."""
    from probegate.canonical import canonical_line
    from probegate.reports.escape import json_bytes
    from probegate.reports.sarif.log import build_parts

    def build(report: Any) -> dict[str, Any]:
        document, rules_of, results_of = build_parts(report)
        run = document["runs"][0]
        run["tool"]["driver"]["rules"] = list(rules_of())
        run["results"] = list(results_of())
        return document

    unsafe = make_finding(1).model_copy(update={"summary": "bidi \u202e and DEL \x7f here"})
    for report in (golden_report(), make_report([make_finding(0), unsafe, make_finding(2)])):
        whole = json_bytes(canonical_line(build(report)))
        assert sarif.render(report) == whole
        pieces: list[bytes] = []
        sarif.write(report, pieces.append)
        assert len(pieces) > 3 and b"".join(pieces) == whole


def test_a_result_the_schema_refuses_mid_stream_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third result is refused after the first two were written: the error names its
    place, and the file is never there (written through a temporary file, then dropped)."""
    from probegate.reports import FORMATS, FormatName

    made = results.result
    report = make_report([make_finding(i) for i in range(3)])
    third = report.findings[2].id

    def third_bad(*args: Any) -> Any:
        result = made(*args)
        return {**result, "level": "fatal"} if args[0].id == third else result

    monkeypatch.setattr(results, "result", third_bad)
    path = tmp_path / "scan.sarif"
    with pytest.raises(ReportError, match=r"runs/0/results/2/level"):
        FORMATS[FormatName.SARIF].write_file(path, report)
    assert list(tmp_path.iterdir()) == []
