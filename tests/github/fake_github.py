"""A fake GitHub REST API on 127.0.0.1, checked against GitHub's own API description.

Real HTTP (http.server in a thread), so the code under test uses its real httpx client.
Every request is validated with openapi-core against tests/data/github-openapi-subset.json
(trimmed from GitHub's official description by scripts/trim_github_openapi.py), plus two
limits the description omits: a comment body of at most 65,536 characters and a status
description of at most 140. Every response the fake serves is validated too, so the fake
cannot drift from what GitHub returns. Problems are collected in ``violations`` (and
answered with 422, as GitHub would); tests assert that list is empty.

Artifact downloads answer 302 to a second local server (another host: 127.0.0.2 when the
system allows binding it), as GitHub's do; that server records any request that carries an
Authorization header as a violation and refuses it, so the token never travels there.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse

SPEC_PATH = Path(__file__).resolve().parents[1] / "data" / "github-openapi-subset.json"
_SPEC_CACHE: dict[str, Any] = {}
SPEC_SERVER = "https://api.github.com"  # the description's server; paths are what we check


def load_spec() -> tuple[dict[str, Any], OpenAPI]:
    if "spec" not in _SPEC_CACHE:
        spec = json.loads(SPEC_PATH.read_text(encoding="utf-8"))
        _SPEC_CACHE["spec"] = spec
        _SPEC_CACHE["openapi"] = OpenAPI.from_dict(spec)
    return _SPEC_CACHE["spec"], _SPEC_CACHE["openapi"]


def instance(spec: dict[str, Any], schema: dict[str, Any], depth: int = 0) -> Any:
    """A minimal valid value of ``schema``: required properties filled with plain values."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return instance(spec, spec["components"]["schemas"][name], depth)
    if schema.get("nullable") and depth > 0:
        return None
    for combo in ("allOf",):
        if combo in schema:
            merged: dict[str, Any] = {}
            for part in schema[combo]:
                value = instance(spec, part, depth)
                if isinstance(value, dict):
                    merged.update(value)
            return merged
    for combo in ("anyOf", "oneOf"):
        if combo in schema:
            return instance(spec, schema[combo][0], depth)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        return {k: instance(spec, schema["properties"][k], depth + 1)
                for k in schema.get("required", []) if k in schema.get("properties", {})}
    if kind == "array":
        return []
    if kind == "integer":
        return 1
    if kind == "number":
        return 1.0
    if kind == "boolean":
        return False
    fmt = schema.get("format")
    if fmt == "date-time":
        return "2026-01-01T00:00:00Z"
    if fmt == "uri":
        return "https://example.invalid/"
    if fmt == "email":
        return "x@example.invalid"
    return "x"


@dataclass
class Fault:
    """Answer the next ``times`` matching requests with this status (before routing)."""

    method: str
    path: str  # regex, matched with re.search against the path
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    message: str = "fault"
    times: int = 1
    raw: bytes | None = None  # the body as sent instead of JSON (an HTML page, nothing)
    delay: float = 0.0        # seconds before answering (a hanging API)
    applied: bool = False     # carry the request out first (the write happens), then fail


class RawBody(bytes):
    """A response body sent as is (not JSON)."""


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class FakeGitHub:
    token: str = "ghs_testtoken"
    read_only: bool = False  # a fork PR's token: every write is refused with 403
    # A second token, read-only like a fork PR's, beside the writing one (several jobs of
    # one workflow against one fake: tests/act).
    read_only_token: str | None = None
    requests: list[Recorded] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    annotations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    pulls: dict[int, str] = field(default_factory=dict)  # number -> head sha
    pull_repos: dict[int, str] = field(default_factory=dict)  # number -> head repository full_name
    faults: list[Fault] = field(default_factory=list)
    # the automatic baseline: the base branch's history (newest first), the merge base the
    # compare endpoint reports (None: 404), the artifacts and their zips
    history: list[str] = field(default_factory=list)
    merge_base: str | None = None
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    blobs: dict[int, bytes] = field(default_factory=dict)
    downloads: list[Recorded] = field(default_factory=list)  # requests to the download host
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)  # workflow runs by id
    # an issue's (a pull request's) timeline, oldest first: label events and others
    timeline: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    # each account's role on the repository (GET /collaborators/{username}/permission); one
    # not listed holds `default_role`; None: GitHub's 404 (no such user)
    roles: dict[str, str | None] = field(default_factory=dict)
    default_role: str = "write"
    repository_id: int = 42
    _blob_server: ThreadingHTTPServer | None = None
    blob_url: str = ""
    _next_id: int = 1000
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    base_url: str = ""

    # --- set-up helpers ---------------------------------------------------------------

    def add_comment(self, issue: int, body: str, *, login: str = "github-actions[bot]",
                    user_type: str = "Bot") -> dict[str, Any]:
        comment = self._comment(issue, body, login, user_type)
        self.comments.setdefault(issue, []).append(comment)
        return comment

    def add_artifact(self, head_sha: str, zip_bytes: bytes, *, name: str = "evalcheck-results",
                     expired: bool = False, head_branch: str = "main", from_fork: bool = False,
                     created_at: str = "2026-11-20T10:00:00Z", event: str = "push",
                     omit: tuple[str, ...] = ()) -> dict[str, Any]:
        """An artifact and the workflow run that uploaded it (``event`` on ``head_branch``,
        of a fork when ``from_fork``); ``omit``: keys left out of the artifact's
        ``workflow_run`` (all are optional in GitHub's description)."""
        aid = self._new_id()
        artifact = instance(self.spec, {"$ref": "#/components/schemas/artifact"})
        artifact.update(id=aid, name=name, expired=expired, size_in_bytes=len(zip_bytes),
                        created_at=created_at,
                        archive_download_url=f"https://api.github.com/repos/octo/agents/actions/artifacts/{aid}/zip",
                        workflow_run={k: v for k, v in {
                            "id": aid + 50000, "repository_id": self.repository_id,
                            "head_repository_id": self.repository_id + (1 if from_fork else 0),
                            "head_branch": head_branch, "head_sha": head_sha}.items() if k not in omit})
        run = instance(self.spec, {"$ref": "#/components/schemas/workflow-run"})
        run.update(id=aid + 50000, event=event, head_branch=head_branch, head_sha=head_sha)
        run["repository"]["full_name"] = "octo/agents"
        run["head_repository"]["full_name"] = "someone/agents" if from_fork else "octo/agents"
        self.runs[aid + 50000] = run
        self.artifacts.insert(0, artifact)  # GitHub lists the newest first
        self.blobs[aid] = zip_bytes
        return artifact

    def add_label_event(self, issue: int, label: str, *, actor: str = "alice", event: str = "labeled",
                        created_at: str = "2026-11-20T10:00:00Z", actor_type: str = "User") -> dict[str, Any]:
        """A labeled or unlabeled event on the issue's timeline, as GitHub's description
        shapes it (labeled-issue-event / unlabeled-issue-event)."""
        schema = "labeled-issue-event" if event == "labeled" else "unlabeled-issue-event"
        item = instance(self.spec, {"$ref": f"#/components/schemas/{schema}"})
        user = instance(self.spec, {"$ref": "#/components/schemas/simple-user"})
        user.update(login=actor, type=actor_type)
        item.update(id=self._new_id(), event=event, actor=user, created_at=created_at,
                    label={"name": label, "color": "ededed"}, commit_id=None, commit_url=None,
                    performed_via_github_app=None)
        self.timeline.setdefault(issue, []).append(item)
        return item

    def add_push_event(self, issue: int, sha: str, *, event: str = "committed",
                       actor: str = "mallory", created_at: str = "2026-11-20T11:00:00Z") -> dict[str, Any]:
        """A push on the pull request's timeline: a ``committed`` event (timeline-committed-event:
        a commit, with no time of its own but its author's), or a ``head_ref_force_pushed`` /
        ``head_ref_restored`` event (issue events of the common shape: actor, commit_id, created_at)."""
        if event == "committed":
            item = instance(self.spec, {"$ref": "#/components/schemas/timeline-committed-event"})
            person = {"name": actor, "email": f"{actor}@example.invalid", "date": created_at}
            item.update(event="committed", sha=sha, node_id=f"C_{sha[:8]}", author=person, committer=person,
                        url=f"https://api.github.com/repos/octo/agents/git/commits/{sha}",
                        html_url=f"https://github.com/octo/agents/commit/{sha}", message="a push")
            item["tree"] = {"sha": "f" * 40, "url": "https://api.github.com/repos/octo/agents/git/trees/" + "f" * 40}
        else:
            item = instance(self.spec, {"$ref": "#/components/schemas/state-change-issue-event"})
            user = instance(self.spec, {"$ref": "#/components/schemas/simple-user"})
            user.update(login=actor, type="User")
            item.update(id=self._new_id(), event=event, actor=user, created_at=created_at, commit_id=sha,
                        commit_url=f"https://api.github.com/repos/octo/agents/commits/{sha}",
                        performed_via_github_app=None)
        self.timeline.setdefault(issue, []).append(item)
        return item

    def add_timeline_comment(self, issue: int, body: str) -> dict[str, Any]:
        """Another kind of timeline event (a comment), which the label search must skip."""
        item = instance(self.spec, {"$ref": "#/components/schemas/timeline-comment-event"})
        user = instance(self.spec, {"$ref": "#/components/schemas/simple-user"})
        item.update(id=self._new_id(), event="commented", body=body, actor=user, user=user)
        self.timeline.setdefault(issue, []).append(item)
        return item

    def writes(self) -> list[Recorded]:
        return [r for r in self.requests if r.method != "GET"]

    # --- server -------------------------------------------------------------------------

    def __enter__(self) -> FakeGitHub:
        self.spec, self.openapi = load_spec()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, headers, body = fake.handle(self.command, self.path, dict(self.headers), raw)
                if isinstance(body, RawBody):
                    data, kind = bytes(body), "text/html; charset=utf-8"
                else:
                    data, kind = b"" if body is None else json.dumps(body).encode(), "application/json; charset=utf-8"
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout test)
                    pass

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle

        class BlobHandler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                status, data = fake.handle_download(self.path, dict(self.headers))
                self.send_response(status)
                self.send_header("Content-Type", "application/zip")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        try:
            self._blob_server = ThreadingHTTPServer(("127.0.0.2", 0), BlobHandler)
        except OSError:  # a system without the whole 127/8 on loopback: another port then
            self._blob_server = ThreadingHTTPServer(("127.0.0.1", 0), BlobHandler)
        host, port = self._blob_server.server_address[:2]
        self.blob_url = f"http://{host}:{port}"
        for server in (self._server, self._blob_server):
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                             daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        for server in (self._server, self._blob_server):
            if server is not None:
                server.shutdown()
                server.server_close()

    def handle_download(self, target: str, headers: dict[str, str]) -> tuple[int, bytes]:
        """The storage host a download redirects to: a signed URL, no token wanted."""
        parts = urlsplit(target)
        lowered = {k.lower(): v for k, v in headers.items()}
        with self._lock:
            self.downloads.append(Recorded("GET", parts.path, parse_qs(parts.query), lowered, None))
        if "authorization" in lowered:
            self.violations.append(f"GET {parts.path} on the download host carried an Authorization header")
            return 400, b"<Error>Authorization header not allowed with a signed URL</Error>"
        m = re.fullmatch(r"/artifacts/(\d+)\.zip", parts.path)
        if not m or parse_qs(parts.query).get("sig") != ["signed"] or int(m.group(1)) not in self.blobs:
            return 403, b"<Error>AuthenticationFailed</Error>"
        return 200, self.blobs[int(m.group(1))]

    # --- request handling --------------------------------------------------------------

    def handle(self, method: str, target: str, headers: dict[str, str],
               raw: bytes) -> tuple[int, dict[str, str], Any]:
        parts = urlsplit(target)
        path, query = parts.path, parse_qs(parts.query)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = "<invalid json>"
        lowered = {k.lower(): v for k, v in headers.items()}
        with self._lock:
            self.requests.append(Recorded(method, path, query, lowered, body))
        read_only = self.read_only or (self.read_only_token is not None
                                       and lowered.get("authorization") == f"Bearer {self.read_only_token}")
        if lowered.get("authorization") != f"Bearer {self.token}" and not read_only:
            return 401, {}, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}
        for name, want in (("accept", "application/vnd.github+json"), ("x-github-api-version", "2022-11-28")):
            if lowered.get(name) != want:
                self.violations.append(f"{method} {path}: header {name}={lowered.get(name)!r}, want {want!r}")
        problem = self._validate_request(method, path, query, raw, lowered)
        if problem:
            self.violations.append(problem)
            return 422, {}, {"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest"}
        with self._lock:
            fault = next((f for f in self.faults if f.times > 0 and f.method == method
                          and re.search(f.path, path)), None)
            if fault is not None:
                fault.times -= 1
        if fault is not None:
            time.sleep(fault.delay)
            answer = (fault.status, fault.headers,
                      RawBody(fault.raw) if fault.raw is not None else
                      {"message": fault.message, "documentation_url": "https://docs.github.com/rest"})
            if not fault.applied:
                return answer
            self._route(method, path, query, body)
            return answer
        if read_only and method != "GET":
            return 403, {"x-accepted-github-permissions": "issues=write; pull_requests=write"}, {
                "message": "Resource not accessible by integration",
                "documentation_url": "https://docs.github.com/rest", "status": "403"}
        status, out_headers, out = self._route(method, path, query, body)
        if status < 400:  # GitHub's description documents few of its error answers
            self._validate_response(method, path, query, raw, status, out, out_headers)
        return status, out_headers, out

    def _validate_request(self, method: str, path: str, query: dict[str, list[str]],
                          raw: bytes, headers: dict[str, str]) -> str | None:
        request = MockRequest(SPEC_SERVER, method.lower(), path,
                              args={k: v[0] for k, v in query.items()}, data=raw or None,
                              headers={"Content-Type": "application/json"} if raw else {})
        try:
            self.openapi.validate_request(request)
        except Exception as exc:  # openapi-core raises several families; all are findings
            return f"{method} {path}: request does not match GitHub's API description: {_why(exc)}"
        body = json.loads(raw) if raw else {}
        if isinstance(body, dict):
            if "/comments" in path and isinstance(body.get("body"), str) and _utf16(body["body"]) > 65536:
                return f"{method} {path}: comment body is {_utf16(body['body'])} characters (max 65536)"
            if "/statuses/" in path and len(body.get("description") or "") > 140:
                return f"{method} {path}: status description is {len(body['description'])} characters (max 140)"
        return None

    def _validate_response(self, method: str, path: str, query: dict[str, list[str]], raw: bytes,
                           status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        request = MockRequest(SPEC_SERVER, method.lower(), path,
                              args={k: v[0] for k, v in query.items()}, data=raw or None,
                              headers={"Content-Type": "application/json"} if raw else {})
        if body is None:  # a redirect: no body, the documented status and headers
            response = MockResponse(b"", status_code=status, headers=headers or {}, content_type=None)
        else:
            response = MockResponse(json.dumps(body).encode(), status_code=status)
        try:
            self.openapi.validate_response(request, response)
        except Exception as exc:
            self.violations.append(f"fake served an invalid response to {method} {path}: {_why(exc)}")

    def _route(self, method: str, path: str, query: dict[str, list[str]],
               body: Any) -> tuple[int, dict[str, str], Any]:
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/(.+)", path)
        if not m:
            return 404, {}, {"message": "Not Found"}
        owner, repo, rest = m.groups()
        with self._lock:
            if (mm := re.fullmatch(r"issues/(\d+)/comments", rest)):
                issue = int(mm.group(1))
                if method == "GET":
                    return self._list_comments(owner, repo, issue, query)
                comment = self._comment(issue, body["body"], "github-actions[bot]", "Bot", owner, repo)
                self.comments.setdefault(issue, []).append(comment)
                return 201, {}, comment
            if (mm := re.fullmatch(r"issues/(\d+)/timeline", rest)) and method == "GET":
                return self._list_timeline(owner, repo, int(mm.group(1)), query)
            if (mm := re.fullmatch(r"collaborators/([^/]+)/permission", rest)) and method == "GET":
                return self._permission(mm.group(1))
            if (mm := re.fullmatch(r"issues/comments/(\d+)", rest)) and method == "PATCH":
                cid = int(mm.group(1))
                for comment in (c for cs in self.comments.values() for c in cs):
                    if comment["id"] == cid:
                        if comment["user"]["type"] != "Bot":
                            return 403, {}, {"message": "Resource not accessible by integration"}
                        comment["body"] = body["body"]
                        comment["updated_at"] = "2026-01-02T00:00:00Z"
                        return 200, {}, comment
                return 404, {}, {"message": "Not Found"}
            if rest == "check-runs" and method == "POST":
                cid = self._new_id()
                run = self._check_run(cid, owner, repo, body)
                self.check_runs[cid] = run
                self.annotations[cid] = list(body.get("output", {}).get("annotations", []))
                return 201, {}, self._check_run_view(cid)
            if (mm := re.fullmatch(r"check-runs/(\d+)", rest)) and method == "PATCH":
                cid = int(mm.group(1))
                if cid not in self.check_runs:
                    return 404, {}, {"message": "Not Found"}
                run = self.check_runs[cid]
                for key in ("status", "conclusion", "name", "details_url"):
                    if key in body:
                        run[key] = body[key]
                if "output" in body:
                    run["output"].update({k: v for k, v in body["output"].items() if k != "annotations"})
                    self.annotations[cid].extend(body["output"].get("annotations", []))
                return 200, {}, self._check_run_view(cid)
            if (mm := re.fullmatch(r"commits/([0-9a-f]+)/check-runs", rest)) and method == "GET":
                name = query.get("check_name", [None])[0]
                found = [self._check_run_view(cid) for cid, run in self.check_runs.items()
                         if run["head_sha"] == mm.group(1) and name in (None, run["name"])]
                return 200, {}, {"total_count": len(found), "check_runs": found}
            if (mm := re.fullmatch(r"statuses/([0-9a-f]+)", rest)) and method == "POST":
                status = {**instance(self.spec, {"$ref": "#/components/schemas/status"}),
                          "id": self._new_id(), "state": body["state"], "sha": mm.group(1),
                          "description": body.get("description"), "target_url": body.get("target_url"),
                          "context": body.get("context", "default"), "creator": None}
                self.statuses.append(status)
                return 201, {}, {k: v for k, v in status.items() if k != "sha"}
            if method == "GET" and (answer := self._baseline_route(rest, query)) is not None:
                return answer
            if (mm := re.fullmatch(r"pulls/(\d+)", rest)) and method == "GET":
                number = int(mm.group(1))
                if number not in self.pulls:
                    return 404, {}, {"message": "Not Found"}
                pr = instance(self.spec, {"$ref": "#/components/schemas/pull-request"})
                pr.update(number=number)
                pr["head"]["sha"] = self.pulls[number]
                if number in self.pull_repos:
                    pr["head"]["repo"] = {**instance(self.spec, {"$ref": "#/components/schemas/repository"}),
                                          "full_name": self.pull_repos[number]}
                return 200, {}, pr
        return 404, {}, {"message": "Not Found"}

    def _baseline_route(self, rest: str, query: dict[str, list[str]]) -> tuple[int, dict[str, str], Any] | None:
        if (mm := re.fullmatch(r"compare/([0-9a-f]+)\.\.\.([0-9a-f]+)", rest)):
            if self.merge_base is None:
                return 404, {}, {"message": "Not Found"}
            comparison = instance(self.spec, {"$ref": "#/components/schemas/commit-comparison"})
            comparison["merge_base_commit"] = self._commit(self.merge_base)
            comparison["base_commit"] = self._commit(mm.group(1))
            return 200, {}, comparison
        if rest == "commits":
            start = query.get("sha", [""])[0]
            if start not in self.history:
                return 404, {}, {"message": "No commit found for SHA: " + start}
            per_page = int(query.get("per_page", ["30"])[0])
            at = self.history.index(start)
            return 200, {}, [self._commit(sha) for sha in self.history[at:at + per_page]]
        if rest == "actions/artifacts":
            name = query.get("name", [None])[0]
            per_page = int(query.get("per_page", ["30"])[0])
            page = int(query.get("page", ["1"])[0])
            listed = [a for a in self.artifacts if name is None or a["name"] == name]
            headers = {}
            if page * per_page < len(listed):  # as GitHub pages: Link rel="next"
                url = f"{self.base_url}/repos/octo/agents/actions/artifacts?per_page={per_page}"
                url += f"&name={name}" if name else ""
                headers["Link"] = f'<{url}&page={page + 1}>; rel="next"'
            return 200, headers, {"total_count": len(listed),
                                  "artifacts": listed[(page - 1) * per_page: page * per_page]}
        if (mm := re.fullmatch(r"actions/runs/(\d+)", rest)):
            run = self.runs.get(int(mm.group(1)))
            return (200, {}, run) if run is not None else (404, {}, {"message": "Not Found"})
        if (mm := re.fullmatch(r"actions/artifacts/(\d+)/zip", rest)):
            aid = int(mm.group(1))
            artifact = next((a for a in self.artifacts if a["id"] == aid), None)
            if artifact is None:
                return 404, {}, {"message": "Not Found"}
            if artifact["expired"]:
                return 410, {}, {"message": "Artifact has expired"}
            return 302, {"Location": f"{self.blob_url}/artifacts/{aid}.zip?sig=signed"}, None
        return None

    def _commit(self, sha: str) -> dict[str, Any]:
        commit = instance(self.spec, {"$ref": "#/components/schemas/commit"})
        commit["sha"] = sha
        # nullable anyOf: the validator (OpenAPI 3.0 rules) wants one of the two shapes
        commit["author"] = commit["committer"] = {}
        return commit

    def _list_comments(self, owner: str, repo: str, issue: int,
                       query: dict[str, list[str]]) -> tuple[int, dict[str, str], Any]:
        per_page = int(query.get("per_page", ["30"])[0])
        page = int(query.get("page", ["1"])[0])
        items = self.comments.get(issue, [])
        last = max(1, -(-len(items) // per_page))
        headers = {}
        url = f"{self.base_url}/repos/{owner}/{repo}/issues/{issue}/comments?per_page={per_page}"
        links = []
        if page < last:
            links.append(f'<{url}&page={page + 1}>; rel="next"')
            links.append(f'<{url}&page={last}>; rel="last"')
        if links:
            headers["Link"] = ", ".join(links)
        return 200, headers, items[(page - 1) * per_page: page * per_page]

    def _list_timeline(self, owner: str, repo: str, issue: int,
                       query: dict[str, list[str]]) -> tuple[int, dict[str, str], Any]:
        per_page = int(query.get("per_page", ["30"])[0])
        page = int(query.get("page", ["1"])[0])
        items = self.timeline.get(issue, [])
        headers = {}
        if page * per_page < len(items):  # as GitHub pages: Link rel="next"
            url = f"{self.base_url}/repos/{owner}/{repo}/issues/{issue}/timeline?per_page={per_page}"
            headers["Link"] = f'<{url}&page={page + 1}>; rel="next"'
        return 200, headers, items[(page - 1) * per_page: page * per_page]

    def _permission(self, login: str) -> tuple[int, dict[str, str], Any]:
        from urllib.parse import unquote

        login = unquote(login)
        role = self.roles.get(login, self.default_role)
        if role is None:
            return 404, {}, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
        answer = instance(self.spec, {"$ref": "#/components/schemas/repository-collaborator-permission"})
        user = instance(self.spec, {"$ref": "#/components/schemas/nullable-collaborator"})
        user.update(login=login, type="User")
        # the legacy base role: maintain reads as write, triage as read (GitHub's description)
        answer.update(permission={"maintain": "write", "triage": "read"}.get(role, role), role_name=role,
                      user=user)
        return 200, {}, answer

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _comment(self, issue: int, body: str, login: str, user_type: str,
                 owner: str = "octo", repo: str = "agents") -> dict[str, Any]:
        cid = self._new_id()
        comment = instance(self.spec, {"$ref": "#/components/schemas/issue-comment"})
        user = instance(self.spec, {"$ref": "#/components/schemas/simple-user"})
        user.update(login=login, type=user_type)
        comment.update(id=cid, body=body, user=user,
                       html_url=f"https://github.com/{owner}/{repo}/pull/{issue}#issuecomment-{cid}")
        return comment

    def _check_run(self, cid: int, owner: str, repo: str, body: dict[str, Any]) -> dict[str, Any]:
        run = instance(self.spec, {"$ref": "#/components/schemas/check-run"})
        run.update(id=cid, name=body["name"], head_sha=body["head_sha"],
                   status=body.get("status", "queued"), conclusion=body.get("conclusion"),
                   details_url=body.get("details_url"), external_id=body.get("external_id"),
                   html_url=f"https://github.com/{owner}/{repo}/runs/{cid}")
        if "conclusion" in body:
            run["status"] = "completed"
        output = body.get("output") or {}
        run["output"] = {"title": output.get("title"), "summary": output.get("summary"),
                         "text": output.get("text"), "annotations_count": 0,
                         "annotations_url": f"https://api.github.com/repos/{owner}/{repo}/check-runs/{cid}/annotations"}
        return run

    def _check_run_view(self, cid: int) -> dict[str, Any]:
        run = json.loads(json.dumps(self.check_runs[cid]))
        run["output"]["annotations_count"] = len(self.annotations[cid])
        return run


def _why(exc: BaseException) -> str:
    """The schema errors themselves (paths and reasons), not the whole offending value."""
    cause = exc.__cause__ or exc.__context__
    errors = getattr(cause, "schema_errors", None) or getattr(exc, "schema_errors", None)
    if errors:
        return "; ".join(f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message[:300]}"
                         for e in errors)
    return f"{type(exc).__name__}: {str(exc)[:500]}"


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2
