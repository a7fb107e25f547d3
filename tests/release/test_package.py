"""The package users install: built as the release workflow builds it (python -m build: the
sdist, then the wheel from the sdist), named `evalcheck-adk` (PyPI's `evalcheck` is an
unrelated project), with the commands `evalcheck` and `evalcheck-adk`; and nothing in the
repository tells anyone to install the bare name `evalcheck`."""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
NAME = "evalcheck-adk"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = PYPROJECT["project"]["version"]
# The packages the wheel ships, and the folders whose every file it must carry.
PACKAGES = ("checker", "evalcheck_adk_bridge", "evalcheck_adk_ts")


# --- nobody is told to install the unrelated `evalcheck` -------------------------------

# An installer command, up to the end of the shell command: pip (also python -m pip, pip3,
# uv pip), pipx, uv add / uv tool install, poetry add, pdm add.
INSTALL = re.compile(r"\b(?:pip3?|pipx|uv(?:\s+pip|\s+tool)?|poetry|pdm)\s+(?:install|add|download)\b"
                     r"(?P<args>[^\n;&|]*)")
TOKEN = re.compile(r"\"[^\"]*\"|'[^']*'|`[^`]*`|\S+")
# Options whose value is a path or URL, not a requirement.
VALUED = {"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-t", "--target",
          "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--prefix", "--root",
          "-d", "--dest", "--python"}
# The bare name as a requirement anywhere, even outside a command: with extras, a version
# or a direct URL (`evalcheck[judges]`, `evalcheck>=0.1`, `evalcheck @ git+https://...`),
# or quoted right after "install" (install `evalcheck`; prose about the product, "install
# evalcheck", is not a package name). Not evalcheck-adk, not evalcheck/evalcheck.
NAMED = re.compile(r"(?<![\w./-])evalcheck(?![\w-])\s*(?:\[|[=<>~!]=|@\s*(?:git\+|https?:|file:))"
                   r"|\binstall\s+[`'\"]evalcheck[`'\"]", re.I)


def bare_installs(text: str) -> list[str]:
    """The lines of ``text`` that tell someone to install the distribution `evalcheck`."""
    found = []
    for line in text.splitlines():
        hit = NAMED.search(line) is not None
        for command in INSTALL.finditer(line):
            args = re.split(r"\s#", command.group("args"), maxsplit=1)[0]  # a shell comment
            tokens = [t.strip("\"'`") for t in TOKEN.findall(args)]
            skip = False
            for token in tokens:
                if skip or token.startswith("-"):
                    skip = not skip and token in VALUED
                    continue
                try:
                    hit |= canonicalize_name(Requirement(token).name) == "evalcheck"
                except InvalidRequirement:
                    pass  # a path (.[adk]), a URL, a placeholder
        if hit:
            found.append(line.strip())
    return found


def shipped_text_files() -> list[Path]:
    """Every file of the repository a user may read or run (docs, README, examples, checker,
    scripts, Dockerfile, workflows ...); tests/ holds the counter-examples above."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout: {listed.stderr.strip()[:200]}")
    files = []
    for name in filter(None, listed.stdout.split("\0")):
        path = ROOT / name
        if name.startswith("tests/") or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" not in data[:4096]:
            files.append(path)
    return files


@pytest.mark.parametrize("text", [
    "pip install evalcheck",
    "pip install 'evalcheck[adk]'   # and google-adk",
    'python -m pip install -U "evalcheck>=0.1"',
    "pipx install evalcheck",
    "uv add Evalcheck",
    "uv tool install evalcheck",
    '- run: pip install "evalcheck @ git+https://github.com/evalcheck/evalcheck@v1"',
    "pip install -r requirements.txt evalcheck",
    "(install `evalcheck[vertex]`; the container has it)",
    "LLM-judged metrics need google-genai: pip install 'evalcheck[judges]'",
    "evalcheck==0.2.0",
    "then install `evalcheck` next to your agent",
])
def test_the_scan_finds_the_bare_name(text):
    assert bare_installs(text) == [text.strip()]


@pytest.mark.parametrize("text", [
    "pip install evalcheck-adk",
    "pip install 'evalcheck-adk[adk]'    # evalcheck and google-adk",
    'pip install "evalcheck-adk @ git+https://github.com/evalcheck/evalcheck@v1"',
    "pip install -r requirements.txt",
    "pip install '.[adk]'",
    "pip install -e .",
    "pip install google-adk   # then run evalcheck",
    "- uses: evalcheck/evalcheck@v1",
    'evalcheck run . --agent-command "evalcheck-adk agents/weather"',
    "It installs the commands `evalcheck` and `evalcheck-adk`.",
    "# Create .venv and install evalcheck with its test dependencies",
])
def test_the_scan_passes_the_right_name(text):
    assert bare_installs(text) == []


def test_nothing_tells_users_to_install_the_unrelated_evalcheck():
    files = shipped_text_files()
    assert {"README.md", "Dockerfile", "docs/agent-protocol.md",
            "examples/agents/adk_weather/agent.py", "checker/judges/client.py"} <= {
        f.relative_to(ROOT).as_posix() for f in files}
    found = [f"{path.relative_to(ROOT)}: {line}" for path in files
             for line in bare_installs(path.read_text(encoding="utf-8", errors="replace"))]
    assert not found, f"install {NAME}, not PyPI's unrelated evalcheck:\n" + "\n".join(found)


def test_the_version_is_read_under_the_distribution_name():
    from checker.version import DISTRIBUTION

    assert PYPROJECT["project"]["name"] == DISTRIBUTION == NAME


# --- the wheel and the sdist ----------------------------------------------------------

@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """sdist and wheel as `python -m build` makes them in the release job (wheel from the
    sdist), plus a wheel built straight from the tree, of a copy of what a checkout holds."""
    tmp = tmp_path_factory.mktemp("package")
    src = tmp / "src"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    for name in filter(None, listed.stdout.split("\0")):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    # --no-isolation: offline, with the backend of the test environment (pyproject's [test]).
    build = [sys.executable, "-m", "build", "--no-isolation"]
    for args, out in (([], "dist"), (["--wheel"], "tree")):
        done = subprocess.run([*build, *args, "--outdir", str(tmp / out), str(src)],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (sdist,) = (tmp / "dist").glob("*.tar.gz")
    (wheel,) = (tmp / "dist").glob("*.whl")
    (tree_wheel,) = (tmp / "tree").glob("*.whl")
    return {"sdist": sdist, "wheel": wheel, "tree_wheel": tree_wheel, "src": src, "tmp": tmp}


def wheel_text(wheel: Path, member: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(f"evalcheck_adk-{VERSION}.dist-info/{member}").decode()


def test_the_artifacts_are_named_for_pypi(dists):
    assert dists["sdist"].name == f"evalcheck_adk-{VERSION}.tar.gz"
    assert dists["wheel"].name == f"evalcheck_adk-{VERSION}-py3-none-any.whl"


def test_the_wheel_metadata_and_commands(dists):
    meta = email.message_from_string(wheel_text(dists["wheel"], "METADATA"))
    assert (meta["Name"], meta["Version"], meta["Requires-Python"]) == (NAME, VERSION, ">=3.11")
    assert {"adk", "judges", "vertex"} <= set(meta.get_all("Provides-Extra"))
    assert meta["License-Expression"] == "Apache-2.0"
    # The license's text ships with it, the repository's own LICENSE file.
    assert meta.get_all("License-File") == ["LICENSE"]
    license_text = wheel_text(dists["wheel"], "licenses/LICENSE")
    assert license_text == (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in license_text
    entry_points = wheel_text(dists["wheel"], "entry_points.txt")
    scripts = dict(re.findall(r"^(\S+) = (\S+)$", entry_points.split("[console_scripts]")[1].split("\n[")[0], re.M))
    assert scripts == {"evalcheck": "checker.cli:console", "evalcheck-adk": "evalcheck_adk_bridge:main",
                       "evalcheck-adk-ts": "evalcheck_adk_ts:main"}


def test_the_wheel_carries_every_file_of_the_packages_and_nothing_else(dists):
    with zipfile.ZipFile(dists["wheel"]) as archive:
        names = {n for n in archive.namelist() if ".dist-info/" not in n}
    source = {p.relative_to(dists["src"]).as_posix() for package in PACKAGES
              for p in (dists["src"] / package).rglob("*") if p.is_file()}
    assert {"checker/report/templates/report.md.j2", "evalcheck_adk_ts/adapter.mjs"} <= source
    assert names == source, {"missing": sorted(source - names), "extra": sorted(names - source)}


def test_the_sdist_holds_what_the_wheel_needs(dists):
    """The wheel built from the sdist (what PyPI users build from) equals the wheel built
    from the tree, and the sdist carries the packages' files, pyproject.toml and README.md."""
    def members(wheel: Path) -> dict[str, bytes]:
        with zipfile.ZipFile(wheel) as archive:
            return {n: archive.read(n) for n in archive.namelist() if not n.endswith("/RECORD")}

    assert members(dists["wheel"]) == members(dists["tree_wheel"])
    prefix = f"evalcheck_adk-{VERSION}/"
    with tarfile.open(dists["sdist"]) as archive:
        names = {m.name.removeprefix(prefix) for m in archive.getmembers() if m.isfile()}
        pkg_info = email.message_from_bytes(archive.extractfile(prefix + "PKG-INFO").read())
    assert pkg_info["Name"] == NAME
    with zipfile.ZipFile(dists["wheel"]) as archive:
        shipped = {n for n in archive.namelist() if ".dist-info/" not in n}
    assert shipped <= names and {"pyproject.toml", "README.md"} <= names, sorted(shipped - names)


def test_the_installed_wheel_runs(dists, tmp_path):
    """Installed alone (dependencies from the test environment), the wheel's `evalcheck`
    reports its version under its own name and renders a report from its own templates."""
    target = dists["tmp"] / "installed"
    if not target.exists():
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                               "--target", str(target), str(dists["wheel"])], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    run = lambda *args: subprocess.run([str(target / "bin" / "evalcheck"), *args], capture_output=True,  # noqa: E731
                                       text=True, env=env, cwd=tmp_path, timeout=300)
    version = run("--version")
    assert (version.returncode, version.stdout.strip()) == (0, f"evalcheck, version {VERSION}"), version.stderr
    where = subprocess.run([sys.executable, "-c", "import checker.cli; print(checker.cli.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert where.stdout.strip().startswith(str(target)), where.stdout + where.stderr
    shutil.copytree(ROOT / "examples" / "weather", tmp_path / "weather")
    report = run("run", "weather/agent_evals", "--replay", "weather/recorded_runs.json",
                 "--markdown", "report.md", "--results", "results.json")
    assert report.returncode == 1, report.stdout + report.stderr  # one case fails on purpose
    assert f"evalcheck {VERSION}" in (tmp_path / "report.md").read_text()
    # The TypeScript adapter runs from the wheel: node starts the adapter it ships.
    adapter = subprocess.run([str(target / "bin" / "evalcheck-adk-ts")], capture_output=True, text=True,
                             env=env, cwd=tmp_path, timeout=60)
    assert (adapter.returncode, adapter.stderr) == (
        2, "usage: evalcheck-adk-ts [--concurrent N] [--export NAME] MODULE\n")
