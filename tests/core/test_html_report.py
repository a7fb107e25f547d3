"""The HTML report (--html): one self-contained page, laid out by headless Chromium with no
console error (its Content-Security-Policy allows only its own script, by hash), showing a
failing case's first divergence; agent text that looks like markup stays text; the filters
work. Needs Debian's chromium (scripts/setup.d/40-render.sh installs it in CI)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    if os.environ.get("CI") == "true":
        raise RuntimeError("chromium is needed in CI: run scripts/setup")
    pytest.skip("chromium not installed (scripts/setup.d/40-render.sh)", allow_module_level=True)

ATTACK = ('<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'
          '</pre></details><b id="injected">bold</b>')


def chromium(page: Path, *args: str) -> subprocess.CompletedProcess:
    profile = page.parent / "profile"
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={profile}", "--window-size=1280,2000",
                           "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000",
                           *args, page.as_uri()], capture_output=True, text=True, timeout=120)


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines()
            if "CONSOLE" in line or "Refused to" in line or "Uncaught" in line]


@pytest.fixture
def page(repo) -> Path:
    expected = [call("get_weather", city="Paris"), call("convert", unit="C")]
    write_json(repo / "evals/w.evalset.json", evalset(
        "weather", case("paris", invocation("Weather in Paris?", "Sunny, 21 C.", tools=expected)),
        case("greet", invocation("Hello", "Hi!"))))
    write_json(repo / "evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0,
                                                              "response_match_score": 0.3}})
    wrong = invocation("Weather in Paris?", ATTACK, tools=[call("get_weather", city="Paris"),
                                                           call("get_time", zone=ATTACK)])
    write_json(repo / "runs.json", replay(
        ("weather", "paris", 1, [wrong]), ("weather", "paris", 2, [wrong]),
        ("weather", "greet", 1, [invocation("Hello", "Hi!")]),
        ("weather", "greet", 2, [invocation("Hello", "Hi!")])))
    out = run_cli(["run", "evals", "--replay", "runs.json", "--html", "report.html",
                   "--results", "r.json"], repo)
    assert out.code == 1, out.output
    return repo / "report.html"


def test_the_page_is_self_contained_and_escapes_agent_text(page):
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing from the network
    assert "<img" not in text and text.count("<script>") == 1 and 'id="injected"' not in text
    assert "&lt;img src=x onerror=" in text and "&lt;script&gt;document.title" in text
    assert "default-src &#x27;none&#x27;" in text or "default-src 'none'" in text


def test_chromium_shows_the_divergence_with_no_console_error(page, tmp_path):
    shot = tmp_path / "report.png"
    done = chromium(page, f"--screenshot={shot}")
    assert done.returncode == 0, done.stderr
    assert shot.stat().st_size > 10_000  # a page was drawn
    assert console_errors(done.stderr) == []
    dom = chromium(page, "--dump-dom")
    assert console_errors(dom.stderr) == []
    html = dom.stdout
    # what the browser built: the agent's markup is text, no element of it exists
    assert not re.search(r"<img\b", html) and '<b id="injected"' not in html
    assert "<title>evalcheck report</title>" in html and "pwned" not in re.search(r"<title>.*?</title>", html).group(0)
    row = re.search(r'<tr class="divergence">(.*?)</tr>', html, re.S)
    assert row, "no first-divergence row"
    assert "convert" in row.group(1) and "get_time" in row.group(1) and "first divergence" in row.group(1)
    assert html.count('<details class="case"') == 2


def test_the_filters_show_the_failing_cases(page, tmp_path):
    # The page's own script, driven: a copy without the policy, clicking "Failing" on load.
    text = page.read_text(encoding="utf-8")
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    text = text.replace("</body>", """<script>
document.querySelector('button[data-filter="failing"]').click();
var out = document.createElement("pre"); out.id = "measured";
out.textContent = JSON.stringify([...document.querySelectorAll("details.case")]
  .filter(c => c.checkVisibility()).map(c => c.querySelector("summary code").textContent));
document.body.appendChild(out);
</script></body>""")
    driven = tmp_path / "driven.html"
    driven.write_text(text, encoding="utf-8")
    dom = chromium(driven, "--dump-dom")
    assert console_errors(dom.stderr) == []
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom.stdout, re.S)
    assert found and json.loads(found.group(1).replace("&quot;", '"')) == ["paris"]
    assert re.search(r'<span id="shown">1</span>', dom.stdout)
