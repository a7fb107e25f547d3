"""The trend of main: the suite's pass rate and each gating metric's mean over the results of
main pooled as the baseline, with this pull request as the last point.

``record_trend`` keeps the points of main in ``comparison.trend`` (oldest first: ``[{commit,
date, passRate, metrics: {name: mean}}]``, ``date`` the result's ``metadata.startedAt``), so
that every rendering - the comment, the job summary, the HTML report, a results file
published later - can draw it. ``mermaid_charts`` draws one
Mermaid ``xychart-beta`` per series (xychart has no legend: one line a chart), rendered by
GitHub itself, main's results named by short commit, else by date (never by file name: a
baseline's name says nothing of when), oldest first (checked with the real
mermaid package in both of GitHub's themes: tests/core/test_trend_render.py);
``trend_lines`` says the same in text for the terminal. Only with at least ``MIN_POINTS``
results of main.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from ..models.results import Results
from .text import printable

MIN_POINTS = 2   # results of main needed for a trend
MAX_METRICS = 4  # gating metrics charted (the first ones of the suite)
MAX_NAME = 48    # characters of a metric's name in a title (the rest of the title is ours)
MAX_TITLE = 120  # characters of a chart's title
# Dates as x labels, the coarsest that tells every result apart: the day, else the minute,
# else the second (results of one minute); a label still shared is numbered.
DATE_FORMATS = ("%Y-%m-%d", "%m-%d %H:%M", "%m-%d %H:%M:%S")
# The line's colour: contrast of at least 3:1 (WCAG, graphics) on the chart's background in
# GitHub's light theme (white) and dark theme (mermaid's #333, on GitHub's #0d1117): 3.75,
# 3.37 and 5.05. Only the colour is set: the theme stays GitHub's.
LINE_COLOUR = "#2f81f7"
INIT = '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "' + LINE_COLOUR + '"}}}}%%'
X_TITLE = "results of main, oldest to newest, then this PR"
_UNQUOTABLE = str.maketrans({'"': "'", "`": "'", "<": "\u2039", ">": "\u203a"})


def _gating(results: Results) -> list[str]:
    names: list[str] = []
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            for m in case.metrics:
                if m.status != "informational" and m.name not in names:
                    names.append(m.name)
    return names


def point(results: Results, names: list[str]) -> dict[str, Any]:
    """One result's pass rate (cases passed / cases) and each metric's mean case score."""
    s = results.summary
    means: dict[str, float | None] = {}
    for name in names:
        scores = [m.score for es in results.eval_sets for c in es.cases for m in c.metrics
                  if m.name == name and m.score is not None]
        means[name] = round(sum(scores) / len(scores), 4) if scores else None
    return {"passRate": round(s.passed / s.cases, 4) if s.cases else None, "metrics": means}


def record_trend(results: Results, baselines: list[Results]) -> None:
    """``comparison.trend`` from the baseline files (newest first, as given)."""
    if results.comparison is None or len(baselines) < MIN_POINTS:
        return
    names = _gating(results)[:MAX_METRICS]
    history = results.comparison.baseline.history or []
    points = []
    for index, baseline in enumerate(baselines):
        commit = history[index].commit if index < len(history) else None
        if commit is None and index == 0:
            commit = results.comparison.baseline.commit
        started = baseline.metadata.get("startedAt") if isinstance(baseline.metadata, dict) else None
        points.append({"commit": commit, "date": started if isinstance(started, str) else None,
                       **point(baseline, names)})
    results.comparison.trend = list(reversed(points))


def _series(results: Results) -> list[tuple[str, list[str], list[float | None]]]:
    """(title, x labels, values) of each chart: pass rate, then each metric's mean."""
    trend = (results.comparison.trend if results.comparison is not None else None) or []
    if len(trend) < MIN_POINTS:
        return []
    labels = _labels(results, trend) + ["this PR"]
    names = [n for n in (trend[-1].get("metrics") or {})]
    here = point(results, names)
    out = [("Suite pass rate", labels, [p.get("passRate") for p in trend] + [here["passRate"]])]
    for name in names:
        values = [(p.get("metrics") or {}).get(name) for p in trend] + [here["metrics"].get(name)]
        if any(v is not None for v in values):
            shown = name if len(name) <= MAX_NAME else name[:MAX_NAME - 1] + "\u2026"
            out.append((f"{shown} (mean)", labels, values))
    return out


def _labels(results: Results, trend: list[dict[str, Any]]) -> list[str]:
    """Each result of main by its short commit, oldest first. The commits may be known only
    after the trend was recorded (the Action's automatic baseline names them afterwards, in
    ``comparison.baseline.history``, newest first); without one, by the result's date (a
    trend recorded before dates were: its place counted from the oldest)."""
    history = (results.comparison.baseline.history if results.comparison is not None else None) or []
    known = list(reversed(history)) if len(history) == len(trend) else []
    commits = [found.get("commit") or (known[index].commit if known else None)
               for index, found in enumerate(trend)]
    shas = [c[:7] if isinstance(c, str) and re.fullmatch(r"[0-9a-f]{7,64}", c) else None for c in commits]
    dates = _dates([None if sha else found.get("date") for sha, found in zip(shas, trend, strict=True)])
    labels = [sha or date or f"#{index + 1}" for index, (sha, date) in enumerate(zip(shas, dates, strict=True))]
    return _numbered(labels)


def _dates(values: list[Any]) -> list[str | None]:
    """ISO times as the coarsest of DATE_FORMATS that tells them apart (None: no date)."""
    parsed: list[datetime | None] = []
    for value in values:
        try:
            parsed.append(datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else None)
        except ValueError:
            parsed.append(None)
    shown: list[str | None] = []
    for fmt in DATE_FORMATS:
        shown = [p.astimezone(UTC).strftime(fmt) if p is not None and p.tzinfo else
                 p.strftime(fmt) if p is not None else None for p in parsed]
        given = [x for x in shown if x is not None]
        if len(set(given)) == len(given):
            break
    return shown


def _numbered(labels: list[str]) -> list[str]:
    """Each label once: a chart's x axis merges points that share one."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def _quoted(text: str) -> str:
    """A Mermaid string that keeps the text's punctuation: only what could end the string,
    the line or the code block is replaced (a quote, a backtick, a newline), markup (mermaid
    drops a tag's text) and what mermaid reads even inside a string: a directive (``%%{``)
    and an entity code (``#quot;``)."""
    text = " ".join(printable(text).split()).translate(_UNQUOTABLE)
    text = re.sub(r"#(?=\w+;)", "# ", text.replace("%%", "% %"))
    return '"' + text[:MAX_TITLE].rstrip() + '"'


def mermaid_charts(results: Results) -> list[str]:
    """The Mermaid source of each chart (no fences); [] without a trend. Each starts with an
    init line giving the line a colour that shows in GitHub's light and dark themes (the
    default line is almost white on white)."""
    charts = []
    for title, labels, values in _series(results):
        count = len(labels) - 1
        # A point without a value (a metric that result did not have) is drawn at 0, said
        # in the title: xychart has no gaps.
        missing = " (0 = not measured)" if any(v is None for v in values) else ""
        charts.append("\n".join([
            INIT,
            "xychart-beta",
            f"    title {_quoted(f'{title}: last {count} results of main, then this PR{missing}')}",
            f"    x-axis {_quoted(X_TITLE)} [{', '.join(_quoted(label) for label in labels)}]",
            f"    y-axis {_quoted('score' if '(mean)' in title else 'pass rate')} 0 --> 1",
            f"    line [{', '.join(f'{(v or 0):.3f}' for v in values)}]",
        ]))
    return charts


def trend_markdown(results: Results) -> str:
    """Mermaid blocks for the comment and the job summary; "" without a trend."""
    charts = mermaid_charts(results)
    if not charts:
        return ""
    return "\n\n".join(f"```mermaid\n{chart}\n```" for chart in charts)


def trend_lines(results: Results) -> list[str]:
    """The terminal's text fallback: one line a series, oldest first, this PR last."""
    lines = []
    for title, labels, values in _series(results):
        shown = " ".join("n/a" if v is None else f"{v:.2f}" for v in values[:-1])
        last = "n/a" if values[-1] is None else f"{values[-1]:.2f}"
        lines.append(f"trend of main: {title} over {len(labels) - 1} results: {shown} -> this PR {last}")
    return lines


def trend_html(results: Results) -> str:
    """A small table of the same numbers for the HTML report (escaped); "" without a trend."""
    from .html_parts import esc, table, tag

    series = _series(results)
    if not series:
        return ""
    labels = series[0][1]
    rows = [[esc(title)] + ["n/a" if v is None else f"{v:.2f}" for v in values]
            for title, _, values in series]
    return tag("h3", "Trend of main") + table(["series", *(esc(label) for label in labels)], rows, "trend")
