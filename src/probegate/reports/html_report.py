"""The HTML report: one self-contained file a developer opens after a scan.

Everything is inline (styles, a small filter script, an SVG bar chart per ASI category), so the
file works offline, from an artifact download or an email attachment, and loads nothing from
the network. A Content-Security-Policy meta tag allows only this file's own style and script
(pinned by hash), so even a bug in escaping could not run injected script or phone home.

Every piece of agent text is escaped with :func:`html.escape` (via :func:`escape.html_text`).
Evidence is shown where it happened: each evidence ``path`` + ``start``/``end`` is resolved into
the finding's transcript (:func:`probegate.models.transcript.text_at`) and the span is
wrapped in ``<mark>``; the split is made on the raw string before escaping, so offsets stay true.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

from probegate.models.report import Finding, ScanReport, most_severe_first
from probegate.models.taxonomy import ASI_TITLES, SEVERITY_RANK, Severity
from probegate.models.transcript import Transcript, text_at
from probegate.models.verdict import Evidence
from probegate.perf import gc_paused
from probegate.reports.agreement_html import section as agreement_section
from probegate.reports.diff_html import section as comparison_section
from probegate.reports.digest import authority_reasons, stop_text, unjudged_groups
from probegate.reports.escape import html_text, number, truncate
from probegate.reports.guard_summary import guard_rows
from probegate.reports.headline import (
    controls_text,
    not_evaluated_reason,
    out_of_100,
    scale,
    score_text,
    surface_text,
    target_text,
)
from probegate.reports.html_chart import chart
from probegate.reports.peers_summary import TITLE as PEERS_TITLE
from probegate.reports.peers_summary import peer_rows

TEXT_MAX = 20_000  # per transcript string; a runaway reply must not make the file unusable

_CSS = """
:root{--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--card:#f6f8fa;--mark:#fff8c5;
--crit:#82071e;--high:#cf222e;--med:#bc4c00;--low:#4d2d00;--ok:#1a7f37}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1100px;padding:24px;font:14px/1.5 system-ui,-apple-system,
"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;border-bottom:1px solid var(--line);
padding-bottom:4px;margin-top:32px}h3{font-size:15px;margin:0 0 8px}
code,pre,.mono{font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.mono,li,p,dd,h3{overflow-wrap:anywhere}
td,td.mono{overflow-wrap:break-word}th{overflow-wrap:normal;word-break:keep-all}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:4px 0;background:var(--card);
padding:8px;border-radius:6px;max-width:100%}
.wide{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;width:100%;margin:8px 0}th,td{border:1px solid var(--line);
padding:4px 8px;text-align:left;vertical-align:top}th{background:var(--card)}
dl.meta{display:flex;flex-wrap:wrap;gap:4px 24px;margin:8px 0}
dl.meta div{min-width:0}dl.meta dt{font-size:12px;color:var(--muted)}dl.meta dd{margin:0}
.muted{color:var(--muted)}.score{font-size:40px;font-weight:700}
.badge{display:inline-block;padding:0 8px;border-radius:12px;font-size:12px;font-weight:600;
color:#fff;background:var(--muted)}
.sev-critical{background:var(--crit)}.sev-high{background:var(--high)}
.sev-medium{background:var(--med)}.sev-low{background:var(--low)}
.finding{border:1px solid var(--line);border-radius:8px;padding:12px 16px;margin:12px 0}
.finding[hidden]{display:none}.suppressed{opacity:.7}
.turn{border-left:3px solid var(--line);padding:2px 10px;margin:8px 0}
.turn.assistant{border-color:#0969da}.turn.user{border-color:#8250df}
.role{font-weight:600;font-size:12px;text-transform:uppercase;color:var(--muted)}
mark{background:var(--mark);outline:2px solid #d4a72c;border-radius:2px}
.filters{display:flex;gap:16px;align-items:center;flex-wrap:wrap;background:var(--card);
padding:8px 12px;border-radius:8px}
.warn{border-left:4px solid var(--high);padding:4px 12px;background:#ffebe9}
.okay{border-left:4px solid var(--ok);padding:4px 12px;background:#dafbe1}
.cover{font-size:15px}tr.worst td{background:#ffebe9;color:#82071e;font-weight:600}
dl.args{margin:4px 0}dl.args dt{font-weight:600}dl.args dd{margin:0 0 4px 16px}
"""

_JS = """
(function(){
var sev=document.getElementById('f-sev'),asi=document.getElementById('f-asi'),
sup=document.getElementById('f-sup'),count=document.getElementById('f-count');
if(!sev){return;}
function apply(){
var min=parseInt(sev.value||'0',10),a=asi.value,n=0,items=document.querySelectorAll('.finding');
for(var i=0;i<items.length;i++){var el=items[i];
var ok=parseInt(el.getAttribute('data-rank'),10)>=min&&(!a||el.getAttribute('data-asi')===a)&&
(sup.checked||el.getAttribute('data-suppressed')!=='1');el.hidden=!ok;if(ok){n++;}}
count.textContent=n+' shown';}
sev.addEventListener('change',apply);asi.addEventListener('change',apply);
sup.addEventListener('change',apply);apply();})();
"""


def _sha256(source: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode()


CSP = (
    "default-src 'none'; "
    f"style-src '{_sha256(_CSS)}'; "
    f"script-src '{_sha256(_JS)}'; "
    "base-uri 'none'; form-action 'none'"
)


Escape = Callable[[str], str]


class _Escaped(dict[str, str]):
    """:func:`html_text` of each distinct string, computed once per render.

    Most of a report's strings repeat from finding to finding (categories, channels, tool and
    argument names, roles, a transcript's fixed replies): a repeat is one dict lookup instead
    of a scan for characters to escape. Used as ``_Escaped().__getitem__``; it lives as long as
    the render that made it and holds only strings of that report.
    """

    def __missing__(self, text: str) -> str:
        escaped = self[text] = html_text(text)
        return escaped


def render(report: ScanReport) -> bytes:
    pieces: list[bytes] = []
    write(report, pieces.append)
    return b"".join(pieces)


def write(report: ScanReport, sink: Callable[[bytes], object], chunk: int = 1 << 20) -> None:
    """The page handed to ``sink`` in pieces of about ``chunk`` bytes, each part encoded as the
    findings are reached: a 10,000-finding page (25 MB) is never held whole, nor its parts."""
    with gc_paused():
        # Each part encoded on its own: one part with an arrow or a non-Latin-1 character made
        # the whole joined document two bytes a character, which was then encoded character by
        # character (0.08 s of the 10,000-finding bench; 0.03 s part by part, ASCII copied).
        # Appended to one buffer as each is encoded: 230,000 encoded parts kept for a join
        # touched as much memory again (canonical._layout).
        out = bytearray()
        for part in _document(report):
            out += part.encode("utf-8")
            if len(out) >= chunk:
                sink(bytes(out))
                out.clear()
        sink(bytes(out))


def _document(report: ScanReport) -> Iterator[str]:
    esc = html_text
    cached: Escape = _Escaped().__getitem__
    yield from (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        '<meta name="referrer" content="no-referrer">\n',
        f"<title>probegate {esc(report.scan_id)}: {esc(report.band)} "
        f"{out_of_100(report.aivss)}</title>\n",
        f"<style>{_CSS}</style>\n</head>\n<body>\n",
    )
    yield from _header(report)
    yield from chart(report)
    yield from comparison_section(report.comparison)
    yield from agreement_section(
        report.agreement,
        lambda transcript, evidence: _transcript(transcript, _marks_of(evidence), cached),
    )
    yield from _findings(report, cached)
    yield from _results_table(report, cached)
    yield from _guard(report)
    yield from _peers(report)
    yield from _unjudged(report)
    yield from _not_run(report)
    yield from _not_applicable(report)
    yield (
        f'<p class="muted">probegate {esc(report.package_version)} · probe library '
        f"{esc(report.probe_library_version)} · formula {esc(report.aivss_formula_version)} · "
        f"created {esc(report.created_at)}</p>\n"
    )
    yield f"<script>{_JS}</script>\n</body>\n</html>\n"


def _header(report: ScanReport) -> list[str]:
    esc = html_text
    summary = report.findings_summary
    authority = report.authority
    out = [
        f'<h1>probegate scan <span class="mono">{esc(report.scan_id)}</span></h1>\n',
        f'<p class="muted">target {esc(target_text(report.target))} · mode '
        f"{esc(report.mode)} · seed {report.seed} · tier {esc(report.tier)} · "
        f"{esc(report.stopped_reason)}</p>\n",
        f"<p><strong>Surface:</strong> {esc(surface_text(report.target))}</p>\n",
        f'<p><span class="score">{score_text(report.aivss)}</span><span class="muted">'
        f"{scale(report.aivss)}</span> <strong>{esc(report.band)}</strong> (higher is safer)</p>\n",
        f"<p><strong>Stopped:</strong> {esc(stop_text(report))}</p>\n",
    ]
    if report.aivss is None:
        out.append(f'<p class="warn">No score: {esc(not_evaluated_reason(report))}.</p>\n')
    if authority.authoritative:
        out.append('<p class="okay">The score is <strong>authoritative</strong>.</p>\n')
    else:
        reasons = "".join(f"<li>{esc(r)}</li>" for r in authority_reasons(report))
        out.append(
            '<div class="warn"><p>The score is <strong>not authoritative</strong>, so '
            "<code>--fail-under</code> cannot pass on this scan. What would change it:</p>"
            + (f"<ul>{reasons}</ul>" if reasons else "")
            + "</div>\n"
        )
    counts = " · ".join(
        f'<span class="badge sev-{s.value}">{summary.get(s.value, 0)} {s.value}</span>'
        for s in Severity
    )
    not_run = f" · {len(report.not_run)} not run" if report.not_run else ""
    out.append(
        f"<p>{counts} · {len(report.unjudged)} unjudged attempt(s) · "
        f"{len(report.not_applicable)} not applicable{not_run}</p>\n"
    )
    out.append(f"<p>{esc(controls_text(report))}</p>\n")
    return out


def _findings(report: ScanReport, esc: Escape) -> Iterator[str]:
    """The findings section, each finding's parts made as it is reached."""
    findings = most_severe_first(report.findings)
    asis = sorted({f.asi for f in findings})
    yield f"<h2>Findings ({len(findings)})</h2>\n"
    if not findings:
        yield "<p>No probe succeeded against the agent.</p>\n"
        return
    options = "".join(
        f'<option value="{SEVERITY_RANK[s]}">{s.value} and above</option>' for s in Severity
    )
    asi_options = "".join(f'<option value="{esc(a)}">{esc(a)}</option>' for a in asis)
    yield (
        '<div class="filters"><label>Severity <select id="f-sev"><option value="0">all</option>'
        f"{options}</select></label>"
        f'<label>ASI <select id="f-asi"><option value="">all</option>{asi_options}</select>'
        '</label><label><input type="checkbox" id="f-sup" checked> show suppressed</label>'
        '<span id="f-count" class="muted"></span></div>\n'
    )
    for finding in findings:
        yield from _finding(finding, esc)


def _finding(finding: Finding, esc: Escape) -> list[str]:
    """The finding's parts, not joined: a part an agent wrote outside Latin-1 (an emoji, a
    curly quote) would make the whole finding four or two bytes a character, copied wide and
    encoded character by character (the 10,000-finding bench's page took 17,000-21,000 page
    faults to build with each finding joined, 2,000-3,000 with its parts)."""
    sev = finding.severity.value
    suppressed = finding.suppressed is not None
    parts = [
        f'<article class="finding{" suppressed" if suppressed else ""}" '
        f'data-rank="{SEVERITY_RANK[finding.severity]}" data-asi="{esc(finding.asi)}" '
        f'data-suppressed="{1 if suppressed else 0}" id="f-{esc(finding.fp)}">'
        f'<h3><span class="badge sev-{sev}">{sev}</span> {esc(finding.name)} '
        f'<span class="mono muted">{esc(finding.probe_id)}</span></h3>'
        f"<p>{esc(finding.summary)}</p>"
    ]
    if finding.suppressed is not None:
        expires = finding.suppressed.expires
        parts.append(
            f"<p><strong>Suppressed:</strong> {esc(finding.suppressed.reason)}"
            + (f" (expires {esc(expires)})" if expires else "")
            + "</p>"
        )
    # A wrapping list, not a nine-column table: it fits any width without scrolling sideways.
    # One string: the nine entries were nine pairs joined, for every finding.
    location = finding.location
    parts.append(
        f'<dl class="meta"><div><dt>ASI</dt><dd>{esc(finding.asi)} '
        f"{esc(ASI_TITLES.get(finding.asi, ''))}</dd></div>"
        f"<div><dt>OWASP LLM</dt><dd>{esc(', '.join(finding.owasp_llm))}</dd></div>"
        f"<div><dt>MITRE ATLAS</dt><dd>{esc(', '.join(finding.mitre_atlas))}</dd></div>"
        f"<div><dt>CSA</dt><dd>{esc(finding.csa_category)}</dd></div>"
        f"<div><dt>Channel</dt><dd>{esc(finding.channel)}</dd></div>"
        f"<div><dt>Severity score (0-10)</dt><dd>{number(finding.aivss_severity)}</dd></div>"
        f"<div><dt>Attempts</dt><dd>{finding.successes}/{finding.attempt_count} vulnerable"
        f"</dd></div><div><dt>Confidence</dt><dd>{number(finding.confidence)}</dd></div>"
        f'<div><dt>Location</dt><dd><span class="mono">{esc(location.path)}:{location.line}'
        "</span></dd></div></dl>"
    )
    # The transcript is written first (it is shown last): writing it measures each string an
    # evidence path can name, so locating the evidence reads a length instead of the path.
    lengths: Lengths = {}
    transcript = finding.transcript
    shown = [] if transcript is None else _transcript(transcript, _marks(finding), esc, lengths)
    if finding.evidence:
        parts += _evidence(finding.evidence, transcript, lengths, esc)
    if finding.control is not None:
        control = finding.control
        parts.append(
            f'<p><strong>Control</strong> <span class="mono">{esc(control.attempt_id)}</span> '
            f"(the same conversation without the attack): {esc(control.summary)}</p>"
        )
        if control.transcript is not None:
            parts.append("<details><summary>Control transcript</summary>")
            parts += _transcript(control.transcript, _marks_of(control.evidence), esc)
            parts.append("</details>")
    if finding.trigger_prompt:
        parts.append(
            f"<details><summary>Trigger prompt</summary><pre>"
            f"{esc(truncate(finding.trigger_prompt, TEXT_MAX))}</pre></details>"
        )
    if transcript is not None:
        parts += ("<details><summary>Transcript</summary>", *shown, "</details>")
    parts.append(
        f'<p><strong>Remediation:</strong> {esc(finding.remediation)}</p><p class="muted mono">'
        f"fp {esc(finding.fp)} · id {esc(finding.id)}"
        + (f" · reproducer {esc(finding.pov_reference)}" if finding.pov_reference else "")
        + "</p></article>\n"
    )
    return parts


def _evidence(
    evidence: list[Evidence], transcript: Transcript | None, lengths: Lengths, esc: Escape
) -> list[str]:
    """The evidence list, each item located by the lengths the transcript's rendering measured."""
    parts = ["<p><strong>Evidence</strong></p><ul>"]
    for ev in evidence:
        length = lengths.get(ev.path)  # None: a string it does not show, or no string at all
        located = _locates(transcript, ev) if length is None else 0 <= ev.start <= ev.end <= length
        parts.append(
            f"<li>{esc(ev.detector)} · {esc(ev.category)} · score {number(ev.score)} · "
            f'<span class="mono">{esc(ev.path)} [{ev.start}:{ev.end}]</span>'
            f"{'' if located else ' (not located in transcript)'}: "
            f"<mark>{esc(ev.subject)}</mark></li>"
        )
    parts.append("</ul>")
    return parts


Marks = dict[str, list[tuple[int, int]]]
# The length of each string a transcript's rendering showed, by its evidence path.
Lengths = dict[str, int]


def _marks(finding: Finding) -> Marks:
    return _marks_of(finding.evidence)


def _marks_of(evidence: list[Evidence]) -> Marks:
    marks: Marks = {}
    for ev in evidence:
        marks.setdefault(ev.path, []).append((ev.start, ev.end))
    return marks


def _locates(transcript: Transcript | None, ev: Evidence) -> bool:
    """Whether the evidence path names a string of the transcript and the offsets fit it."""
    text = text_at(transcript, ev.path) if transcript is not None else None
    return text is not None and 0 <= ev.start <= ev.end <= len(text)


def _transcript(
    transcript: Transcript, marks: Marks, esc: Escape, lengths: Lengths | None = None
) -> list[str]:
    """The turns as HTML parts (not joined, as :func:`_finding`'s); with ``lengths``, each
    string shown is measured into it under the path :func:`probegate.models.transcript.text_at`
    reads it at."""
    seen: Lengths = {} if lengths is None else lengths  # a control's: measured for no one
    parts: list[str] = []
    for ti, turn in enumerate(transcript.turns):
        base = f"turns.{ti}"
        who = turn.role + (f" ({turn.name})" if turn.name else "")
        session = f" · session {turn.session}" if turn.session != 1 else ""
        parts.append(
            f'<div class="turn {esc(turn.role)}"><div class="role">{esc(who)}{session}</div>'
        )
        if turn.content:
            path = base + ".content"
            seen[path] = len(turn.content)
            parts.append(f"<pre>{_highlight(turn.content, marks.get(path), esc)}</pre>")
        for ci, call in enumerate(turn.tool_calls):
            cbase = f"{base}.tool_calls.{ci}"
            undeclared = "" if call.declared else " (undeclared tool)"
            parts.append(
                f'<div><span class="mono">→ {esc(call.name)}</span>{undeclared}'
                f"{_value(call.arguments, cbase + '.arguments', marks, esc, seen)}"
            )
            if call.result is not None:
                path = cbase + ".result"
                seen[path] = len(call.result)
                parts.append(
                    f'<div class="muted">result</div>'
                    f"<pre>{_highlight(call.result, marks.get(path), esc)}</pre>"
                )
            if call.error is not None:
                path = cbase + ".error"
                seen[path] = len(call.error)
                parts.append(
                    f'<div class="muted">error</div>'
                    f"<pre>{_highlight(call.error, marks.get(path), esc)}</pre>"
                )
            parts.append("</div>")
        parts.append("</div>")
    return parts


def _value(value: Any, path: str, marks: Marks, esc: Escape, seen: Lengths | None) -> str:
    """A tool-call argument, nested as the agent sent it, each string highlightable by path.

    ``seen`` is None below a key that is no string or holds a dot: the dotted path names
    another value (or none) there, so a string under it is highlighted but not measured.
    """
    if isinstance(value, str):
        if seen is not None:
            seen[path] = len(value)
        return f"<pre>{_highlight(value, marks.get(path), esc)}</pre>"
    if isinstance(value, dict):
        if not value:
            return "<pre>{}</pre>"
        items = "".join(
            f"<dt>{esc(str(k))}</dt><dd>"
            f"{_value(v, f'{path}.{k}', marks, esc, _below(seen, k))}</dd>"
            for k, v in sorted(value.items())  # sorted: the JSON report sorts keys too
        )
        return f'<dl class="args">{items}</dl>'
    if isinstance(value, list):
        if not value:
            return "<pre>[]</pre>"
        items = "".join(
            f"<li>{_value(v, f'{path}.{i}', marks, esc, seen)}</li>" for i, v in enumerate(value)
        )
        return f'<ol start="0">{items}</ol>'
    return f"<pre>{esc(json.dumps(value))}</pre>"


def _below(seen: Lengths | None, key: object) -> Lengths | None:
    """Where a dict's value under ``key`` is measured: the dotted path reads it only through a
    string key without a dot."""
    return seen if type(key) is str and "." not in key else None


def _highlight(text: str, spans: list[tuple[int, int]] | None, esc: Escape) -> str:
    """``text`` escaped, with each in-range evidence span wrapped in ``<mark>``.

    Splitting happens on the raw string, then each piece is escaped on its own: the offsets
    refer to the raw text, and escaping first would move them.
    """
    if len(text) > TEXT_MAX:
        spans = [(s, e) for s, e in spans or [] if e <= TEXT_MAX - 1]
        text = truncate(text, TEXT_MAX)
    if not spans:
        return esc(text)
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if not 0 <= start < end <= len(text):
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out: list[str] = []
    cursor = 0
    for start, end in merged:
        out.append(esc(text[cursor:start]))
        out.append(f"<mark>{esc(text[start:end])}</mark>")
        cursor = end
    out.append(esc(text[cursor:]))
    return "".join(out)


def _results_table(report: ScanReport, esc: Escape) -> list[str]:
    out = [
        f"<h2>Probes ({len(report.results)})</h2>\n<details><summary>Every probe and its "
        'outcome</summary><div class="wide"><table><tr><th>Probe</th><th>ASI</th>'
        "<th>Severity</th>"
        "<th>Outcome</th><th>Attempts</th><th>Vulnerable</th><th>Resisted</th>"
        "<th>Unjudged</th><th>Reason</th></tr>\n"
    ]
    for r in sorted(report.results, key=lambda r: (r.asi, r.probe_id)):
        out.append(
            f'<tr><td class="mono">{esc(r.probe_id)}</td><td>{esc(r.asi)}</td>'
            f"<td>{r.severity.value}</td><td>{esc(r.outcome)}</td><td>{r.attempts}</td>"
            f"<td>{r.vulnerable}</td><td>{r.resisted}</td><td>{r.unjudged}</td>"
            f"<td>{esc(r.reason)}</td></tr>\n"
        )
    out.append("</table></div></details>\n")
    return out


def _guard(report: ScanReport) -> list[str]:
    return _rows("Runtime guard", guard_rows(report.guard) if report.guard is not None else [])


def _peers(report: ScanReport) -> list[str]:
    return _rows(PEERS_TITLE, peer_rows(report.peers)) if report.peers is not None else []


def _rows(title: str, rows: list[tuple[str, str]]) -> list[str]:
    """A section of label/value rows (the guard's, the A2A peers'); nothing without rows."""
    if not rows:
        return []
    out = [f'<h2>{html_text(title)}</h2>\n<div class="wide"><table>\n']
    out += [f"<tr><th>{html_text(k)}</th><td>{html_text(v)}</td></tr>\n" for k, v in rows]
    out.append("</table></div>\n")
    return out


def _unjudged(report: ScanReport) -> list[str]:
    esc = html_text
    out = [f"<h2>Unjudged attempts ({len(report.unjudged)})</h2>\n"]
    if not report.unjudged:
        out.append("<p>Every attempt was judged.</p>\n")
        return out
    out.append(
        "<p>Not counted as resisted. By cause, with the fix; every attempt and its exact "
        'reason is in <span class="mono">scan.json</span>.</p>'
        '<div class="wide"><table><tr><th>Attempts</th><th>Cause</th><th>Fix</th>'
        "<th>Probes</th></tr>\n"
    )
    for group in unjudged_groups(report):
        probes = ", ".join(f'<span class="mono">{esc(p)}</span>' for p in group.probes[:10])
        more = len(group.probes) - 10
        out.append(
            f"<tr><td>{group.count}</td><td>{esc(group.label)}</td><td>{esc(group.fix)}</td>"
            f"<td>{probes}{f' and {more} more' if more > 0 else ''}</td></tr>\n"
        )
    out.append("</table></div>\n")
    return out


def _not_run(report: ScanReport) -> list[str]:
    esc = html_text
    if not report.not_run:
        return []
    out = [
        f"<h2>Not run ({len(report.not_run)})</h2>\n<p>These probes need something this target "
        "does not expose (an LLM judge, a secret the agent holds, tools served by probegate), "
        "so they were not planned; they count neither as resisted nor as unjudged.</p>"
        '<div class="wide"><table><tr><th>Probe</th><th>Reason</th><th>Enable with</th></tr>\n'
    ]
    for item in report.not_run:
        out.append(
            f'<tr><td class="mono">{esc(item.probe_id)}</td><td>{esc(item.reason)}</td>'
            f'<td class="mono">{esc(item.enabled_by)}</td></tr>\n'
        )
    out.append("</table></div>\n")
    return out


def _not_applicable(report: ScanReport) -> list[str]:
    if not report.not_applicable:
        return []
    items = ", ".join(f'<span class="mono">{html_text(p)}</span>' for p in report.not_applicable)
    return [f"<h2>Not applicable ({len(report.not_applicable)})</h2>\n<p>{items}</p>\n"]
