#!/usr/bin/env python3
"""Release helpers for .github/workflows/release.yml (tested in tests/release).

    release_action.py tags v1.4.2
        -> prints "version=v1.4.2" and "major=v1" (append to $GITHUB_OUTPUT)
    release_action.py version v1.4.2 pyproject.toml
        -> refuses unless pyproject.toml's [project] version is 1.4.2 (the package on PyPI
           and the image of a release carry the same version)
    release_action.py pin action.yml docker://ghcr.io/owner/evalcheck:v1.4.2@sha256:...
        -> rewrites `runs.image: Dockerfile` to that image, nothing else

On main, action.yml builds the Dockerfile (`image: Dockerfile`), so the repository works
before any release exists. A release commit (only reachable from the version tags) pins
the prebuilt multi-arch image instead, so `uses: owner/evalcheck@v0` (0.x releases) pulls it rather than
building it. The edit is textual: comments, order and quoting of action.yml stay as they
are. Exit status: 0 done, 2 refused (the reason on stderr).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

VERSION_TAG = re.compile(r"v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
# docker://REGISTRY/PATH:TAG, optionally @sha256:DIGEST; lower case as registries require.
IMAGE = re.compile(r"docker://[a-z0-9.-]+(?::\d+)?(?:/[a-z0-9._-]+)+:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
                   r"(?:@sha256:[0-9a-f]{64})?")
IMAGE_LINE = re.compile(r"^(?P<indent>[ \t]+)image:[ \t]*(?P<value>\S.*?)[ \t]*(?P<comment>#.*)?$")


class Refused(Exception):
    """The input is not what a release expects; the message says why."""


def release_tags(tag: str) -> dict[str, str]:
    """``v1.4.2`` -> {"version": "v1.4.2", "major": "v1"}; anything else is refused."""
    match = VERSION_TAG.fullmatch(tag.strip())
    if match is None:
        raise Refused(f"tag {tag!r} is not a version tag vX.Y.Z (e.g. v1.4.2)")
    return {"version": match.group(0), "major": f"v{match.group(1)}"}


def package_version_matches(tag: str, pyproject: str) -> str:
    """The package version of ``pyproject`` (its text), if it is the version of ``tag``."""
    wanted = release_tags(tag)["version"].removeprefix("v")
    try:
        version = tomllib.loads(pyproject)["project"]["version"]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise Refused(f"pyproject.toml has no readable [project] version ({exc})") from None
    if version != wanted:
        raise Refused(f"pyproject.toml says version {version!r}; the tag {tag} needs {wanted!r}: "
                      f"set it, commit, and tag that commit")
    return version


def _runs_block(lines: list[str]) -> tuple[int, int]:
    """First and past-the-last line index of the top-level ``runs:`` mapping."""
    start = next((i for i, line in enumerate(lines)
                  if re.match(r"^runs:[ \t]*(#.*)?$", line.rstrip("\r\n"))), None)
    if start is None:
        raise Refused("no top-level 'runs:' in action.yml")
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#"):
        end += 1
    return start, end


def pin_image(text: str, image: str) -> str:
    """action.yml's text with ``runs.image: Dockerfile`` replaced by ``image``."""
    if IMAGE.fullmatch(image) is None:
        raise Refused(f"image {image!r} is not docker://REGISTRY/NAME:TAG[@sha256:DIGEST] in lower case")
    lines = text.splitlines(keepends=True)
    start, end = _runs_block(lines)
    found = [(i, m) for i in range(start + 1, end) if (m := IMAGE_LINE.match(lines[i].rstrip("\r\n")))]
    if len(found) != 1:
        raise Refused(f"expected one 'image:' under 'runs:', found {len(found)}")
    (i, match), = found
    value = match.group("value").strip("'\"")
    if value.startswith("docker://"):
        raise Refused(f"action.yml already uses {value}: pin a commit whose action.yml builds the Dockerfile")
    if value != "Dockerfile":
        raise Refused(f"runs.image is {value!r}, expected 'Dockerfile'")
    using = [line for line in lines[start + 1:end] if re.match(r"^[ \t]+using:[ \t]*['\"]?docker['\"]?[ \t]*$",
                                                                 line.rstrip("\r\n"))]
    if not using:
        raise Refused("runs.using is not 'docker'")
    newline = lines[i][len(lines[i].rstrip("\r\n")):]
    comment = f"  {match.group('comment')}" if match.group("comment") else ""
    lines[i] = f"{match.group('indent')}image: {image}{comment}{newline}"
    return "".join(lines)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror or exc}") from None


def main(argv: list[str]) -> int:
    try:
        if len(argv) == 2 and argv[0] == "tags":
            for key, value in release_tags(argv[1]).items():
                print(f"{key}={value}")
            return 0
        if len(argv) == 3 and argv[0] == "version":
            path = Path(argv[2])
            print(f"{path}: version {package_version_matches(argv[1], _read(path))}, as the tag {argv[1]}")
            return 0
        if len(argv) == 3 and argv[0] == "pin":
            path = Path(argv[1])
            path.write_text(pin_image(_read(path), argv[2]), encoding="utf-8")
            print(f"{path}: runs.image is now {argv[2]}")
            return 0
    except Refused as exc:
        print(f"release_action: {exc}", file=sys.stderr)
        return 2
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
