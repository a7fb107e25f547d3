#!/usr/bin/env python3
"""Regenerate tests/data/github-openapi-subset.json from GitHub's official REST description.

The fake GitHub server in tests/github validates every request our client sends (and every
response it serves) against this subset. Source: the npm package ``@octokit/openapi``
(MIT; ``generated/api.github.com.json`` is github/rest-api-description's bundled 3.0.3
description plus Octokit extensions). To refresh:

    cd /tmp && npm pack @octokit/openapi && tar -xzf octokit-openapi-*.tgz
    python scripts/trim_github_openapi.py /tmp/package/generated/api.github.com.json

Only the operations the publisher and the baseline finder call are kept, with every component they reference
(transitively); unused operations and examples are dropped to keep the file small.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "github-openapi-subset.json"

# (path, method): the calls checker/action/github/client.py makes.
OPERATIONS: list[tuple[str, str]] = [
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "get"),
    ("/repos/{owner}/{repo}/issues/{issue_number}/comments", "post"),
    ("/repos/{owner}/{repo}/issues/comments/{comment_id}", "patch"),
    ("/repos/{owner}/{repo}/check-runs", "post"),
    ("/repos/{owner}/{repo}/check-runs/{check_run_id}", "patch"),
    # finding a check run whose create may have been applied (no duplicate on a retry)
    ("/repos/{owner}/{repo}/commits/{ref}/check-runs", "get"),
    ("/repos/{owner}/{repo}/statuses/{sha}", "post"),
    ("/repos/{owner}/{repo}/pulls/{pull_number}", "get"),
    # the automatic baseline (checker/action/github/baseline.py)
    ("/repos/{owner}/{repo}/compare/{basehead}", "get"),
    ("/repos/{owner}/{repo}/commits", "get"),
    ("/repos/{owner}/{repo}/actions/artifacts", "get"),
    ("/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}", "get"),
    # which run uploaded a candidate: a push on the base branch of this repository only
    ("/repos/{owner}/{repo}/actions/runs/{run_id}", "get"),
    # accept-label: who added the label to the pull request, and when (github/labels.py)
    ("/repos/{owner}/{repo}/issues/{issue_number}/timeline", "get"),
    # accept-label: whether the account that added the label holds the permission it needs
    ("/repos/{owner}/{repo}/collaborators/{username}/permission", "get"),
]


def _strip(node: Any) -> Any:
    """Drop examples and Octokit/GitHub doc extensions: validation never reads them.

    One normalisation: OpenAPI 3.0.3 says ``nullable`` does not widen an ``enum``, and
    validators (openapi-core) follow it, yet GitHub sends ``"conclusion": null`` for a check
    run in progress; so a nullable enum gets ``null`` added, as GitHub means it.
    """
    if isinstance(node, dict):
        out = {k: _strip(v) for k, v in node.items()
               if k not in ("examples", "example") and not k.startswith("x-")}
        if out.get("nullable") is True and isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref)
        for v in node.values():
            found |= _refs(v)
    elif isinstance(node, list):
        for v in node:
            found |= _refs(v)
    return found


def trim(spec: dict[str, Any]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for path, method in OPERATIONS:
        item = spec["paths"][path]
        paths.setdefault(path, {})[method] = _strip(item[method])
        if "parameters" in item:
            paths[path]["parameters"] = _strip(item["parameters"])
    components: dict[str, dict[str, Any]] = {}
    pending = _refs(paths)
    seen: set[str] = set()
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, _, kind, name = ref.split("/", 3)  # "#/components/<kind>/<name>"
        value = _strip(spec["components"][kind][name])
        components.setdefault(kind, {})[name] = value
        pending |= _refs(value) - seen
    info = spec["info"]
    return {
        "openapi": spec["openapi"],
        "info": {
            "title": "GitHub REST API subset used by evalcheck",
            "version": info.get("version", ""),
            "license": info.get("license", {"name": "MIT"}),
            "description": (
                "Trimmed by scripts/trim_github_openapi.py from npm @octokit/openapi "
                f"{info.get('version', '?')} generated/api.github.com.json (MIT), which "
                "redistributes github/rest-api-description (MIT). Only the operations "
                "evalcheck calls and the components they reference."),
        },
        "servers": spec.get("servers", [{"url": "https://api.github.com"}]),
        "paths": paths,
        "components": {k: dict(sorted(v.items())) for k, v in sorted(components.items())},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="generated/api.github.com.json from @octokit/openapi")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    spec = json.loads(args.source.read_text(encoding="utf-8"))
    subset = trim(spec)
    args.out.write_text(json.dumps(subset, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes, "
          f"{sum(len(v) for v in subset['components'].values())} components)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
