"""Render a PR comment as a reader sees it: GFM to HTML with Debian's ``cmark-gfm`` (GitHub's
own fork of cmark), laid out by headless ``chromium`` with GitHub-like styles.

Used by test_report_rendering.py (where the problem rows sit on the page, which rows are
hidden in closed ``<details>``) and by hand, to look at a screenshot:

    .venv/bin/python tests/github/render_preview.py out.png     # the 60-case comparison
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

WIDTH, HEIGHT = 1280, 900  # one screen of a laptop
STYLE = """
body{font-family:-apple-system,"Segoe UI","Noto Sans",Helvetica,Arial,sans-serif;font-size:14px;
 line-height:1.5;color:#1f2328;max-width:880px;margin:16px auto;padding:0 16px}
table{border-collapse:collapse;display:block;overflow:auto;margin:0 0 16px}
th,td{border:1px solid #d1d9e0;padding:6px 13px}tr:nth-child(2n){background:#f6f8fa}
code{background:#eff1f3;border-radius:6px;padding:.2em .4em;font-size:85%}
pre{background:#f6f8fa;padding:16px;overflow:auto}h2{border-bottom:1px solid #d1d9e0;
 padding-bottom:.3em;font-size:1.5em}h3{font-size:1.25em}h4{font-size:1em}
a{color:#0969da;text-decoration:none}blockquote{border-left:.25em solid #d1d9e0;color:#59636e;
 margin:0;padding:0 1em}
"""
# After layout: every table row's first cell text and its box, written where --dump-dom sees it.
MEASURE = """
<script>
window.addEventListener("load", () => {
  const rows = [...document.querySelectorAll("tr")].map(tr => {
    const r = tr.getBoundingClientRect();
    return {text: tr.cells[0].textContent.trim(), top: r.top + scrollY, bottom: r.bottom + scrollY,
            visible: r.height > 0 && tr.checkVisibility(), isCase: !!tr.cells[0].querySelector("a[href*='#L']")};
  });
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify(rows);
  document.body.appendChild(out);
});
</script>
"""


def tools() -> tuple[str | None, str | None]:
    return shutil.which("cmark-gfm"), shutil.which("chromium") or shutil.which("chromium-browser")


def to_html(markdown: str) -> str:
    cmark, _ = tools()
    assert cmark is not None
    # --unsafe keeps raw HTML (<details>, <sub>) as GitHub does before its own sanitiser
    done = subprocess.run([cmark, "--unsafe", "-e", "table", "-e", "strikethrough", "-e", "autolink",
                           "-e", "tagfilter"], input=markdown, capture_output=True, text=True,
                          check=True, timeout=60)
    return done.stdout


def page(markdown: str, measure: bool = False) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><style>{STYLE}</style></head>"
            f"<body>{to_html(markdown)}{MEASURE if measure else ''}</body></html>")


def _chromium(args: list[str], html: str) -> str:
    _, chromium = tools()
    assert chromium is not None
    with tempfile.TemporaryDirectory(prefix="evalcheck-render-") as tmp:
        path = Path(tmp) / "comment.html"
        path.write_text(html, encoding="utf-8")
        done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               f"--user-data-dir={tmp}/profile", f"--window-size={WIDTH},{HEIGHT}",
                               *args, path.as_uri()],
                              capture_output=True, text=True, timeout=120, check=True)
        return done.stdout


def row_boxes(markdown: str) -> list[dict]:
    """Each table row of the laid-out comment: first cell's text, top/bottom in pixels from
    the top of the page, whether it is visible (not inside a closed <details>) and whether
    it is a case's row (its first cell links to the case's line)."""
    dom = _chromium(["--virtual-time-budget=5000", "--dump-dom"], page(markdown, measure=True))
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, "chromium did not run the measuring script"
    import html as html_module

    return json.loads(html_module.unescape(found.group(1)))


def screenshot(markdown: str, png: Path, height: int = HEIGHT) -> None:
    _chromium([f"--screenshot={png.resolve()}", f"--window-size={WIDTH},{height}"], page(markdown))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    from github_data import compared_results  # noqa: E402
    from test_github_report import comment  # noqa: E402

    from checker.models.results import Results  # noqa: E402

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "comment.png")
    screenshot(comment(Results.model_validate(compared_results())), out, height=int(sys.argv[2]) if len(sys.argv) > 2 else HEIGHT)
    print(f"wrote {out}")
