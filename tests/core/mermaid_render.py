"""Render Mermaid charts with the real mermaid package (tools/mermaid, installed by
scripts/setup.d/40-mermaid.sh) in headless chromium, in the themes GitHub renders them with
(``default`` in its light theme, ``dark`` in its dark one), and read back what was drawn.

Used by test_trend_render.py; by hand, to look at the charts of a report:

    .venv/bin/python tests/core/mermaid_render.py report.md out.png
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MERMAID = Path(__file__).resolve().parents[2] / "tools" / "mermaid" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
THEMES = ("default", "dark")

# Each chart in each theme: what the SVG holds, or the error mermaid raised.
SCRIPT = """
(async () => {
  const charts = JSON.parse(document.getElementById("charts").textContent);
  const out = [];
  for (const theme of %s) {
    mermaid.initialize({startOnLoad: false, theme: theme});
    for (let i = 0; i < charts.length; i++) {
      const box = document.createElement("div");
      box.className = "chart " + theme;
      document.body.appendChild(box);
      try {
        const {svg} = await mermaid.render("chart-" + theme + "-" + i, charts[i]);
        box.innerHTML = svg;
        const texts = (sel) => [...box.querySelectorAll(sel)].map((t) => t.textContent);
        const attrs = (sel, name) => [...box.querySelectorAll(sel)].map((e) => e.getAttribute(name));
        out.push({theme: theme, index: i, error: null, title: texts(".chart-title text"),
                  xLabels: texts(".bottom-axis .label text"), xTitle: texts(".bottom-axis .title text"),
                  yTitle: texts(".left-axis .title text"), lines: attrs(".plot path", "stroke"),
                  points: attrs(".plot path", "d"), background: attrs("rect.background", "fill"),
                  titleColour: attrs(".chart-title text", "fill")});
      } catch (e) {
        out.push({theme: theme, index: i, error: String(e && e.message || e)});
      }
    }
  }
  const pre = document.createElement("pre");
  pre.id = "rendered";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def available() -> bool:
    return chromium() is not None and MERMAID.is_file()


def mermaid_blocks(markdown: str) -> list[str]:
    """The mermaid code blocks of a comment as GitHub finds them: through cmark-gfm (GitHub's
    cmark) when it is installed, else by their fences."""
    cmark = shutil.which("cmark-gfm")
    if cmark is None:
        return re.findall(r"^```mermaid\n(.*?)^```$", markdown, re.S | re.M)
    page = subprocess.run([cmark, "--unsafe", "-e", "table", "-e", "tagfilter"], input=markdown,
                          capture_output=True, text=True, check=True, timeout=60).stdout
    return [html.unescape(b) for b in
            re.findall(r'<pre><code class="language-mermaid">(.*?)</code></pre>', page, re.S)]


def _page(charts: list[str]) -> str:
    data = json.dumps(charts).replace("</", "<\\/")
    return ("<!doctype html><html><head><meta charset='utf-8'>"
            f"<script src='{MERMAID.as_uri()}'></script></head><body style='width:760px'>"
            f"<script id='charts' type='application/json'>{data}</script>"
            f"<script>{SCRIPT % json.dumps(list(THEMES))}</script></body></html>")


def _chromium(page: str, *args: str) -> str:
    browser = chromium()
    assert browser is not None
    with tempfile.TemporaryDirectory(prefix="evalcheck-mermaid-") as tmp:
        path = Path(tmp) / "charts.html"
        path.write_text(page, encoding="utf-8")
        done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               "--allow-file-access-from-files", f"--user-data-dir={tmp}/profile",
                               "--virtual-time-budget=20000", *args, path.as_uri()],
                              capture_output=True, text=True, timeout=180, check=True)
        return done.stdout


def render(charts: list[str]) -> list[dict]:
    """Each chart in each theme (THEMES order, then chart order): what mermaid drew."""
    dom = _chromium(_page(charts), "--dump-dom")
    found = re.search(r'<pre id="rendered">(.*?)</pre>', dom, re.S)
    assert found, "chromium did not finish rendering the charts"
    return json.loads(html.unescape(found.group(1)))


def screenshot(charts: list[str], png: Path) -> None:
    _chromium(_page(charts), f"--screenshot={png.resolve()}", f"--window-size=800,{520 * len(charts) * len(THEMES)}")


def luminance(colour: str) -> float:
    """WCAG relative luminance of #rrggbb, #rgb or a CSS colour name mermaid uses."""
    named = {"white": "#ffffff", "black": "#000000"}
    value = named.get(colour.strip().lower(), colour.strip()).lstrip("#")
    if len(value) == 3:
        value = "".join(c * 2 for c in value)
    assert re.fullmatch(r"[0-9a-fA-F]{6}", value), f"not a colour: {colour!r}"

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(value[i:i + 2], 16) / 255) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


if __name__ == "__main__":
    charts = mermaid_blocks(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "charts.png")
    screenshot(charts, out)
    print(f"wrote {out}: {len(charts)} chart(s) in {len(THEMES)} themes")
