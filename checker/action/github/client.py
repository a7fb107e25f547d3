"""A small GitHub REST client on httpx: the calls the publisher needs, retries, pagination.

Headers and limits per shared/reference/gha-conventions.md section 4. The token only ever
goes into the Authorization header; errors carry the status and GitHub's message, never
the request headers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

API_VERSION = "2022-11-28"
RETRY_STATUSES = {500, 502, 503, 504}
MAX_PAGES = 100  # 10,000 items: a Link chain that never ends is not followed forever


class GitHubError(Exception):
    """A request GitHub refused or could not answer, after retries."""

    def __init__(self, status: int, method: str, path: str, message: str,
                 accepted_permissions: str | None = None, *, maybe_applied: bool = False):
        self.status = status
        self.method = method
        self.path = path
        self.message = message
        self.accepted_permissions = accepted_permissions
        # A write whose answer was lost (5xx, network): GitHub may have carried it out.
        self.maybe_applied = maybe_applied
        super().__init__(f"{method} {path}: HTTP {status}: {message}")

    @property
    def forbidden(self) -> bool:
        """403/404 on a write: a read-only token (fork PR) or missing ``permissions:``."""
        return self.status in (401, 403, 404) and self.method != "GET"


@dataclass
class RetryPolicy:
    attempts: int = 5          # total tries per request
    backoff: float = 1.0       # first wait on 5xx / network errors, doubled each time
    max_wait: float = 60.0     # cap on any one wait, including rate-limit resets


REQUEST_TIMEOUT = 30.0   # seconds for one request, within the budget
MAX_REDIRECTS = 5
DEFAULT_BUDGET = 300.0   # seconds for all of a job's publishing (docs/github-action.md)


class GitHubClient:
    """The token goes only to the API's own origin (scheme, host, port): an absolute
    next-page URL or a redirect elsewhere is refused, not followed. Every request of the
    client shares one budget (``budget`` seconds from creation): a hanging API costs at
    most that much, then each call fails at once."""

    def __init__(self, token: str, api_url: str = "https://api.github.com", *,
                 retry: RetryPolicy | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time,
                 transport: httpx.BaseTransport | None = None,
                 user_agent: str = "evalcheck",
                 budget: float | None = None,
                 monotonic: Callable[[], float] = time.monotonic):
        self._retry = retry or RetryPolicy()
        self._transport = transport
        self._user_agent = user_agent
        self._sleep = sleep
        self._clock = clock
        self._monotonic = monotonic
        self.budget = budget
        self._deadline = None if budget is None else monotonic() + budget
        self._http = httpx.Client(
            base_url=api_url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}",
                     "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": API_VERSION,
                     "User-Agent": user_agent},
            timeout=httpx.Timeout(REQUEST_TIMEOUT), transport=transport, follow_redirects=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transport --------------------------------------------------------------------

    def _wait_for(self, response: httpx.Response) -> float | None:
        """Seconds to wait before retrying this response, or None if it is final."""
        headers = response.headers
        rate_limited = response.status_code == 429 or (
            response.status_code == 403
            and ("retry-after" in headers or headers.get("x-ratelimit-remaining") == "0"))
        if rate_limited:
            if "retry-after" in headers:
                try:
                    return max(0.0, float(headers["retry-after"]))
                except ValueError:
                    return self._retry.max_wait
            reset = headers.get("x-ratelimit-reset")
            if reset and reset.isdigit():
                return max(0.0, int(reset) - self._clock()) + 1.0
            return 60.0  # GitHub's advice for secondary limits without a header
        if response.status_code in RETRY_STATUSES:
            return -1.0  # use exponential backoff
        return None

    def same_origin(self, url: httpx.URL) -> bool:
        api = self._http.base_url
        return (url.scheme, url.host, url.port) == (api.scheme, api.host, api.port)

    def _left(self, method: str, path: str) -> float:
        """Seconds this request may take: the rest of the budget, at most REQUEST_TIMEOUT."""
        if self._deadline is None:
            return REQUEST_TIMEOUT
        left = self._deadline - self._monotonic()
        if left <= 0:
            raise GitHubError(0, method, _short(path), f"publishing budget of {self.budget:g} s spent "
                              "(GitHub did not answer in time); not tried")
        return min(REQUEST_TIMEOUT, left)

    def _send(self, method: str, path: str, json: Any, params: dict[str, Any] | None,
              follow_redirects: bool) -> httpx.Response:
        """One attempt, with redirects on the API's own origin followed (loops refused)."""
        url: httpx.URL | str = path
        if not httpx.URL(path).is_relative_url and not self.same_origin(httpx.URL(path)):
            raise GitHubError(0, method, _short(path), f"refusing to send the token to "
                              f"{httpx.URL(path).host} (not the API host)")
        seen: set[str] = set()
        for _ in range(MAX_REDIRECTS + 1):
            timeout = self._left(method, path)
            response = self._http.request(method, url, json=json, params=params, timeout=timeout)
            if not (response.is_redirect and follow_redirects):
                return response
            target = response.url.join(response.headers["location"])
            if not self.same_origin(target):
                raise GitHubError(response.status_code, method, _short(path),
                                  f"redirected to another host ({target.host}); not followed, "
                                  "the token stays with the API host")
            if str(target) in seen or target == response.url:
                raise GitHubError(response.status_code, method, _short(path), "redirect loop")
            seen.add(str(target))
            if response.status_code == 303:
                method, json = "GET", None
            url, params = target, None
        raise GitHubError(response.status_code, method, _short(path), f"more than {MAX_REDIRECTS} redirects")

    def request(self, method: str, path: str, *, json: Any = None,
                params: dict[str, Any] | None = None, follow_redirects: bool = True,
                idempotent: bool | None = None) -> httpx.Response:
        """With ``follow_redirects=False`` a 3xx answer is returned, not followed. A request
        that is not ``idempotent`` (default: POST) is not retried after an answer that may
        mean it was carried out (5xx, network error): the error says ``maybe_applied`` and
        the caller looks before trying again. Rate limits are retried (nothing was done)."""
        idempotent = method != "POST" if idempotent is None else idempotent
        backoff = self._retry.backoff
        for attempt in range(1, self._retry.attempts + 1):
            last = attempt == self._retry.attempts
            try:
                response = self._send(method, path, json, params, follow_redirects)
            except httpx.TransportError as exc:
                error = GitHubError(0, method, _short(path), f"network error: {type(exc).__name__}",
                                    maybe_applied=method != "GET")
                if last or not idempotent:
                    raise error from None
                self.pause(min(backoff, self._retry.max_wait), error)
                backoff *= 2
                continue
            if response.is_success or (response.is_redirect and not follow_redirects):
                return response
            wait = self._wait_for(response)
            if wait is None or last or (wait < 0 and not idempotent):
                raise self._error(method, path, response)
            if wait < 0:
                wait, backoff = backoff, backoff * 2
            if wait > self._retry.max_wait:
                # A reset an hour away is not worth holding the job for.
                raise self._error(method, path, response)
            self.pause(wait, self._error(method, path, response))
        raise AssertionError("unreachable")

    @property
    def retry(self) -> RetryPolicy:
        return self._retry

    def pause(self, seconds: float, error: GitHubError) -> None:
        """Wait before a retry, unless the budget ends first (then ``error`` is final)."""
        if self._deadline is not None and self._monotonic() + seconds >= self._deadline:
            raise error
        self._sleep(seconds)

    def _error(self, method: str, path: str, response: httpx.Response) -> GitHubError:
        try:
            body = response.json()
            message = body.get("message", "") if isinstance(body, dict) else ""
            errors = body.get("errors") if isinstance(body, dict) else None
            if errors:
                message += f" {errors}"
        except ValueError:
            message = response.text[:200]
        return GitHubError(response.status_code, method, _short(path), message.strip() or response.reason_phrase,
                           response.headers.get("x-accepted-github-permissions"),
                           maybe_applied=method != "GET" and response.status_code >= 500)

    @staticmethod
    def json(response: httpx.Response, kind: type = dict) -> Any:
        """The body of a 2xx answer, which must be JSON of ``kind`` (dict or list)."""
        request = response.request
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, kind):
            what = "object" if kind is dict else "list"
            raise GitHubError(response.status_code, request.method, _short(request.url.path),
                              f"answered {response.status_code} without the JSON {what} expected "
                              f"({response.headers.get('content-type') or 'no content type'})",
                              maybe_applied=request.method != "GET")
        return body

    def paginate(self, path: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a list endpoint, following ``Link: rel="next"`` on the API's origin."""
        url: str | None = path
        query: dict[str, Any] | None = {**(params or {}), "per_page": 100}
        pages = 0
        while url:
            pages += 1
            if pages > MAX_PAGES:
                raise GitHubError(200, "GET", _short(path), f"more than {MAX_PAGES} pages")
            response = self.request("GET", url, params=query)
            yield from (item for item in self.json(response, list) if isinstance(item, dict))
            url = response.links.get("next", {}).get("url")
            query = None  # the next URL carries its own query

    # --- the calls we make --------------------------------------------------------------

    def list_issue_comments(self, owner: str, repo: str, number: int) -> Iterator[dict[str, Any]]:
        return self.paginate(f"/repos/{owner}/{repo}/issues/{number}/comments")

    def create_issue_comment(self, owner: str, repo: str, number: int, body: str) -> dict[str, Any]:
        return self.json(self.request("POST", f"/repos/{owner}/{repo}/issues/{number}/comments",
                                      json={"body": body}))

    def update_issue_comment(self, owner: str, repo: str, comment_id: int, body: str) -> dict[str, Any]:
        return self.json(self.request("PATCH", f"/repos/{owner}/{repo}/issues/comments/{comment_id}",
                                      json={"body": body}))

    def create_check_run(self, owner: str, repo: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self.json(self.request("POST", f"/repos/{owner}/{repo}/check-runs", json=payload))

    def list_check_runs(self, owner: str, repo: str, ref: str, name: str) -> list[dict[str, Any]]:
        """The newest check runs called ``name`` on commit ``ref``."""
        body = self.json(self.request("GET", f"/repos/{owner}/{repo}/commits/{ref}/check-runs",
                                      params={"check_name": name, "filter": "latest", "per_page": 100}))
        runs = body.get("check_runs")
        return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []

    def update_check_run(self, owner: str, repo: str, check_run_id: int,
                         payload: dict[str, Any]) -> dict[str, Any]:
        return self.json(self.request("PATCH", f"/repos/{owner}/{repo}/check-runs/{check_run_id}",
                                      json=payload))

    def create_status(self, owner: str, repo: str, sha: str, payload: dict[str, Any]) -> dict[str, Any]:
        # The newest status of a context wins: posting one twice changes nothing.
        return self.json(self.request("POST", f"/repos/{owner}/{repo}/statuses/{sha}", json=payload,
                                      idempotent=True))

    def list_issue_timeline(self, owner: str, repo: str, number: int) -> Iterator[dict[str, Any]]:
        """The issue's (a pull request's) timeline events, oldest first (needs read access)."""
        return self.paginate(f"/repos/{owner}/{repo}/issues/{number}/timeline")

    def get_collaborator_permission(self, owner: str, repo: str, username: str) -> dict[str, Any]:
        """``username``'s role on the repository (``permission``: admin, write, read or none;
        ``role_name``: the role itself); needs only metadata read access."""
        from urllib.parse import quote

        return self.json(self.request("GET", f"/repos/{owner}/{repo}/collaborators/"
                                             f"{quote(username, safe='')}/permission"))

    def get_pull(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        return self.json(self.request("GET", f"/repos/{owner}/{repo}/pulls/{number}"))

    # --- the automatic baseline (github/baseline.py); all need only read access ----------

    def compare_commits(self, owner: str, repo: str, base: str, head: str) -> dict[str, Any]:
        return self.json(self.request("GET", f"/repos/{owner}/{repo}/compare/{base}...{head}",
                                      params={"per_page": 1}))

    def list_commits(self, owner: str, repo: str, sha: str, count: int) -> list[dict[str, Any]]:
        """The first ``count`` (at most 100) commits of history from ``sha``, newest first."""
        items = self.json(self.request("GET", f"/repos/{owner}/{repo}/commits",
                                       params={"sha": sha, "per_page": count}), list)
        if not isinstance(items, list):
            raise GitHubError(200, "GET", f"/repos/{owner}/{repo}/commits", "expected a list")
        return items

    def list_artifacts(self, owner: str, repo: str, name: str) -> Iterator[dict[str, Any]]:
        """Every artifact called ``name`` (expired ones included), newest first, page after
        page (``Link: rel="next"`` on the API's origin, at most MAX_PAGES pages)."""
        path = f"/repos/{owner}/{repo}/actions/artifacts"
        url: str = path
        query: dict[str, Any] | None = {"name": name, "per_page": 100}
        for _ in range(MAX_PAGES):
            response = self.request("GET", url, params=query)
            body = self.json(response)
            items = body.get("artifacts") if isinstance(body, dict) else None
            if not isinstance(items, list):
                raise GitHubError(200, "GET", path, "expected artifacts")
            yield from (a for a in items if isinstance(a, dict))
            url, query = response.links.get("next", {}).get("url") or "", None
            if not url:
                return
        raise GitHubError(200, "GET", path, f"more than {MAX_PAGES} pages")

    def get_workflow_run(self, owner: str, repo: str, run_id: int) -> dict[str, Any]:
        return self.json(self.request("GET", f"/repos/{owner}/{repo}/actions/runs/{run_id}"))

    def download_artifact(self, owner: str, repo: str, artifact_id: int, max_bytes: int) -> bytes:
        """An artifact's zip. GitHub answers 302 to a short-lived URL on another host, which
        is fetched here without the Authorization header (the token never leaves the API
        host). More than ``max_bytes`` is an error, not a truncated file."""
        path = f"/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/zip"
        answer = self.request("GET", path, follow_redirects=False)
        location = answer.headers.get("location") if answer.is_redirect else None
        if not location:
            raise GitHubError(answer.status_code, "GET", path, "expected a redirect to the download")
        url = httpx.URL(location)
        api = self._http.base_url
        # https only; plain http only when the API itself is (a local test server)
        if url.scheme != "https" and not (url.scheme == "http" and api.scheme == "http"):
            raise GitHubError(answer.status_code, "GET", path, f"refusing a {url.scheme} download URL")
        with httpx.Client(headers={"User-Agent": self._user_agent}, transport=self._transport,
                          timeout=httpx.Timeout(60.0), follow_redirects=False) as bare:
            try:
                with bare.stream("GET", url) as response:
                    if not response.is_success:
                        raise GitHubError(response.status_code, "GET", f"{url.host} (artifact download)",
                                          response.reason_phrase)
                    data = bytearray()
                    for chunk in response.iter_bytes():
                        data += chunk
                        if len(data) > max_bytes:
                            raise GitHubError(response.status_code, "GET", f"{url.host} (artifact download)",
                                              f"artifact larger than {max_bytes} bytes")
                    return bytes(data)
            except httpx.TransportError as exc:
                raise GitHubError(0, "GET", f"{url.host} (artifact download)",
                                  f"network error: {type(exc).__name__}") from None


def _short(path: str) -> str:
    """A path for messages: no query string (a next-page URL may be absolute)."""
    return path.split("?", 1)[0]
