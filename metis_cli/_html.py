"""Self-contained HTML: one drawing as a page, and `metis conform --report`.

A page loads nothing: the style is inline, each drawing is inline SVG (the
`<?xml>` prolog and DOCTYPE that `dot` writes dropped), and there is no script.
So the file works as a CI artifact opened anywhere, offline. Every text that
comes from the input is escaped.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Sequence

import attrs

from ._transcripts import Run

STYLE = """
body { font-family: Helvetica, Arial, sans-serif; margin: 1.5em; color: #212121; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #cfd8dc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #eceff1; }
.violates, .unreadable, .missing { color: #b71c1c; font-weight: bold; }
.conforms { color: #2e7d32; } .undetermined { color: #ef6c00; }
.violation { border: 2px solid #e53935; border-radius: 6px; padding: 0.6em; margin: 1em 0; }
.violation .where { font-family: monospace; }
.drawing { overflow: auto; max-height: 60em; border-top: 1px solid #eeeeee; margin-top: 0.5em; }
.zero { color: #9e9e9e; }
code { background: #f5f5f5; padding: 0 0.2em; }
"""

_PROLOG = re.compile(r"\A\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?(<!--.*?-->\s*)*", re.S)


def inline_svg(svg: str) -> str:
    """`dot`'s SVG document as an element to put inside HTML."""
    return _PROLOG.sub("", svg, count=1)


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )


def drawing_page(title: str, svg: str) -> str:
    """One drawing (`metis draw --out FILE.html`)."""
    body = f"<h1>{html.escape(title)}</h1>\n<div class='drawing'>{inline_svg(svg)}</div>"
    return _page(title, body)


@attrs.frozen
class Drawn:
    """A violation of a file, and its drawing (inline SVG), or why there is none."""

    source: str
    number: int  # the violation's position in its file's report
    svg: str = ""
    missing: str = ""
    invariant: str = ""


def _e(value: object) -> str:
    return html.escape(str(value))


def _where(line: int | None, index: int) -> str:
    return f"line {line}" if line is not None else f"event {index}"


def report_page(run: Run, drawings: Sequence[Drawn], title: str = "metis conform") -> str:
    """The report: the summary per invariant, each violation with its message,
    file, line and drawing, the undecided checks and unreadable files, and the
    coverage table (how often each invariant was checked, in how many files)."""
    parts = [f"<h1>{_e(title)}</h1>", _verdicts(run), _summary(run)]
    parts.append(_violations(run, {(d.source, d.number): d for d in drawings}))
    parts.append(_others(run))
    parts.append(_coverage(run))
    return _page(title, "\n".join(parts))


def _verdicts(run: Run) -> str:
    counts = Counter(r.report.verdict if r.report else "unreadable" for r in run.results)
    order = ("conforms", "violates", "undetermined", "unreadable")
    shown = ", ".join(f"<span class='{v}'>{counts[v]} {v}</span>" for v in order if counts[v])
    rows = "".join(
        f"<tr><td>{_e(r.source)}</td>"
        f"<td class='{_verdict(r)}'>{_verdict(r)}</td>"
        f"<td>{r.report.events if r.report else ''}</td>"
        f"<td>{len(r.report.violations) if r.report else ''}</td></tr>"
        for r in run.results
    )
    return (
        f"<p id='verdicts'>{len(run.results)} file(s): {shown}</p>\n"
        "<table id='files'><tr><th>file</th><th>verdict</th><th>events</th>"
        f"<th>violations</th></tr>{rows}</table>"
    )


def _verdict(result: object) -> str:
    report = getattr(result, "report", None)
    return "unreadable" if report is None else str(report.verdict)


def _summary(run: Run) -> str:
    from metis_model import BY_ID

    counts: Counter[str] = Counter()
    files: dict[str, list[str]] = {}
    for result in run.results:
        for v in result.report.violations if result.report else ():
            counts[v.cited] += 1
            seen = files.setdefault(v.cited, [])
            if result.source not in seen:
                seen.append(result.source)
    if not counts:
        return "<h2>Summary per invariant</h2>\n<p id='summary'>No violation.</p>"
    rows = []
    for cited in sorted(counts):
        invariant = cited.split(" ", 1)[0]
        statement = BY_ID[invariant].statement if invariant in BY_ID else ""
        affected = "<br>".join(_e(f) for f in files[cited])
        rows.append(
            f"<tr><td><b>{_e(cited)}</b><br><small>{_e(statement)}</small></td>"
            f"<td>{counts[cited]}</td><td>{len(files[cited])}</td><td>{affected}</td></tr>"
        )
    return (
        "<h2>Summary per invariant</h2>\n<table id='summary'><tr><th>invariant</th>"
        "<th>violations</th><th>files</th><th>files affected</th></tr>" + "".join(rows) + "</table>"
    )


def _violations(run: Run, drawn: dict[tuple[str, int], Drawn]) -> str:
    out = ["<h2>Violations</h2>"]
    total = 0
    for result in run.results:
        for n, v in enumerate(result.report.violations if result.report else ()):
            total += 1
            picture = drawn.get((result.source, n))
            if picture is None:
                figure = "<p class='zero'>(not drawn)</p>"
            elif picture.missing:
                figure = f"<p class='missing'>not drawn: {_e(picture.missing)}</p>"
            else:
                figure = f"<div class='drawing'>{picture.svg}</div>"
            state = f"<div>state: <code>{_e(v.state)}</code></div>" if v.state else ""
            out.append(
                f"<div class='violation' id='v{total}'>"
                f"<div><b>{_e(v.cited)}</b> violated</div>"
                f"<div class='where'>{_e(result.source)}: {_e(_where(v.line, v.index))}</div>"
                f"<div class='message'>{_e(v.message)}</div>{state}"
                f"<div>slice: events {_e(list(v.slice))}</div>{figure}</div>"
            )
    if total == 0:
        out.append("<p>None.</p>")
    return "\n".join(out)


def _others(run: Run) -> str:
    rows = []
    for result in run.results:
        if result.report is None:
            rows.append(f"<li class='unreadable'>{_e(result.error)}</li>")
            continue
        for u in result.report.undecided:
            allowed = " (allowed)" if u.status in run.allowed else ""
            rows.append(
                f"<li class='undetermined'>{_e(result.source)}: {_e(_where(u.line, u.index))}: "
                f"{_e(u.status)} ({_e(u.invariant)}){allowed}: {_e(u.message)}</li>"
            )
        for note in result.report.notes:
            rows.append(f"<li>{_e(result.source)}: warning: {_e(note.one_line())}</li>")
    if not rows:
        return ""
    return "<h2>Undecided, warnings and unreadable files</h2>\n<ul>" + "".join(rows) + "</ul>"


def _coverage(run: Run) -> str:
    """`metis conform --coverage`'s counts (`metis_model.Coverage`): every
    invariant and how often it was checked, in how many files, then every
    model transition and how often it was taken."""
    from metis_check import Coverage

    reports = [r.report for r in run.results if r.report is not None]
    cov = Coverage()
    cov.add_all(reports)
    summary = cov.summary()
    files: Counter[str] = Counter(k for r in reports for k, n in r.checks.items() if n)
    checks: dict[str, int] = summary["invariants"]
    rows = "".join(
        f"<tr class='{'' if n else 'zero'}'><td>{_e(i)}</td><td>{n}</td><td>{files[i]}</td></tr>"
        for i, n in checks.items()
    )
    steps: dict[str, int] = summary["transitions"]
    step_rows = "".join(
        f"<tr class='{'' if n else 'zero'}'><td>{_e(t)}</td><td>{n}</td></tr>"
        for t, n in steps.items()
    )
    exercised = sum(1 for n in checks.values() if n)
    taken = sum(1 for n in steps.values() if n)
    return (
        f"<h2>Coverage</h2>\n<p>{exercised} of {len(checks)} invariants checked at least once, "
        f"{taken} of {len(steps)} model transitions taken, over {cov.reports} report(s) "
        "(a 0 proves nothing about that invariant).</p>\n"
        "<table id='coverage'><tr><th>invariant</th><th>checks</th><th>files</th></tr>"
        f"{rows}</table>\n"
        "<table id='transitions'><tr><th>transition</th><th>taken</th></tr>"
        f"{step_rows}</table>"
    )
