"""The HTML report's details, as headless chromium lays them out: the expected/actual labels
are readable and sit on their texts; a small p-value is written in scientific form (never
"p 0.00"); counts have their plurals; a screened metric shows its confirmation runs; the
footer says the alpha, the method and the results of main pooled, as the comment's does.
Needs chromium (scripts/setup.d/40-render.sh installs it in CI)."""

from __future__ import annotations

import html
import json
import re

from test_html_report import chromium, console_errors  # skips the module without chromium

from checker.compare.comparison import compare
from checker.report.html import render_html
from checker.report.markdown import render_markdown
from comparehelpers import case_result, metric, results
from corehelpers import case, evalset, invocation, replay, run_cli, write_json

# After layout: each label's font size and the gap down to the text it labels.
MEASURE = """<script>
var out = document.createElement("pre"); out.id = "measured";
out.textContent = JSON.stringify([...document.querySelectorAll(".sidebyside h6")].map(function (h) {
  var text = h.nextElementSibling;
  return {label: h.textContent, size: parseFloat(getComputedStyle(h).fontSize),
          gap: text.getBoundingClientRect().top - h.getBoundingClientRect().bottom};
}));
document.body.appendChild(out);
</script></body>"""


def laid_out(page, tmp_path) -> tuple[str, list[dict]]:
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text(encoding="utf-8"))
    driven = tmp_path / "driven.html"
    driven.write_text(text.replace("</body>", MEASURE), encoding="utf-8")
    dom = chromium(driven, "--dump-dom")
    assert console_errors(dom.stderr) == []
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom.stdout, re.S)
    assert found, "chromium did not run the measuring script"
    return dom.stdout, json.loads(html.unescape(found.group(1)))


def test_labels_p_values_plurals_and_footer(repo, tmp_path):
    """A certain drop: two results of main of 12 right runs each, a PR of 12 wrong runs."""
    write_json(repo / "evals/w.evalset.json", evalset("weather", case("paris", invocation("q", "Sunny in Paris."))))
    write_json(repo / "evals/test_config.json", {"criteria": {"response_match_score": 0.8}})
    for name, answer in (("main", "Sunny in Paris."), ("pr", "I cannot tell.")):
        write_json(repo / f"{name}.runs.json", replay(*[("weather", "paris", n, [invocation("q", answer)])
                                                      for n in range(1, 13)]))
    for name in ("main", "main-older"):
        run_cli(["run", "evals", "--replay", "main.runs.json", "--num-runs", "12", "--results", f"{name}.json"], repo)
    out = run_cli(["run", "evals", "--replay", "pr.runs.json", "--num-runs", "12", "--html", "report.html",
                   "--baseline", "main.json", "--baseline", "main-older.json", "--fail-on", "regression"], repo)
    assert out.code == 1, out.output
    dom, labels = laid_out(repo / "report.html", tmp_path)
    assert [x["label"] for x in labels] == ["expected", "actual"]
    for label in labels:
        assert label["size"] >= 12, label  # h6's default is 0.67em: 9px
        assert 0 <= label["gap"] <= 6, label  # and its default margin left a 20px gap
    # Fisher's one-sided p of 24/24 pooled runs of main against 0/12: 1 / C(36, 12)
    assert "-1.00 (p of the pass rate 7.99e-10)" in dom and "rate 0.00)" not in dom, re.findall(r"\(p [^)]*\)", dom)
    assert "0 of 1 eval case passed in 1 eval set \u00b7 " in dom
    footer = re.search(r'<p class="note footer">(.*?)</p>', dom).group(1)
    assert "verdict rule mean \u00b7 fail-on regression \u00b7 baseline main.json \u00b7 " in footer
    assert ("regressions at family-wise alpha 0.05 over 1 testable case (Tarone: 1 of 1 test can reach the level), decided on the runs recorded, "
            "with no confirmation runs; 2 results of main pooled") in footer


def test_a_screened_metric_shows_its_confirmation_runs_and_the_markdown_footer_agrees(tmp_path):
    files = [results(case_result("c", metric([1.0] * 3))) for _ in range(2)]
    fresh = case_result("c", metric([1.0, 1.0, 0.0, 1.0, 1.0]))
    fresh.metrics[0].confirm_budget = 40
    calm = compare(files, results(case_result("c", metric([0.0, 1.0, 1.0]))),
                   confirmations={("weather", "c"): fresh})
    page = tmp_path / "report.html"
    page.write_text(render_html(calm, fail_on="regression"), encoding="utf-8")
    dom, _ = laid_out(page, tmp_path)
    head = re.search(r'<table class="metrics"><thead><tr>(.*?)</tr>', dom).group(1)
    assert "<th>confirmation runs</th>" in head
    assert "<td>5 fresh runs, 4 passed (budget 40)</td>" in dom
    footer = re.search(r'<p class="note footer">(.*?)</p>', dom).group(1)
    # 4 of 5 fresh runs against 3/3 of the older result: 7 of 8 runs pass, so the fresh runs
    # pass at least 4 times and p(worse) >= 1 - C(7,5)/C(8,5) = 0.625: no level is reachable.
    fw = ("regressions at family-wise alpha 0.05 (Tarone: none of 1 test can reach its level), "
          "decided on fresh confirmation runs")
    assert fw in footer and fw in render_markdown(calm, fail_on="regression").splitlines()[-1]
