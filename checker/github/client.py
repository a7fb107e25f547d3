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


class GitHubError(Exception):
    """A request GitHub refused or could not answer, after retries."""

    def __init__(self, status: int, method: str, path: str, message: str,
                 accepted_permissions: str | None = None):
        self.status = status
        self.method = method
        self.path = path
        self.message = message
        self.accepted_permissions = accepted_permissions
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


class GitHubClient:
    def __init__(self, token: str, api_url: str = "https://api.github.com", *,
                 retry: RetryPolicy | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time,
                 transport: httpx.BaseTransport | None = None,
                 user_agent: str = "evalcheck"):
        self._retry = retry or RetryPolicy()
        self._transport = transport
        self._user_agent = user_agent
        self._sleep = sleep
        self._clock = clock
        self._http = httpx.Client(
            base_url=api_url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}",
                     "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": API_VERSION,
                     "User-Agent": user_agent},
            timeout=httpx.Timeout(30.0), transport=transport, follow_redirects=True)

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

    def request(self, method: str, path: str, *, json: Any = None,
                params: dict[str, Any] | None = None, follow_redirects: bool = True) -> httpx.Response:
        """With ``follow_redirects=False`` a 3xx answer is returned, not followed."""
        backoff = self._retry.backoff
        for attempt in range(1, self._retry.attempts + 1):
            last = attempt == self._retry.attempts
            try:
                response = self._http.request(method, path, json=json, params=params,
                                              follow_redirects=follow_redirects)
            except httpx.TransportError as exc:
                if last:
                    raise GitHubError(0, method, _short(path), f"network error: {type(exc).__name__}") from None
                self._sleep(min(backoff, self._retry.max_wait))
                backoff *= 2
                continue
            if response.is_success or (response.is_redirect and not follow_redirects):
                return response
            wait = self._wait_for(response)
            if wait is None or last:
                raise self._error(method, path, response)
            if wait < 0:
                wait, backoff = backoff, backoff * 2
            if wait > self._retry.max_wait:
                # A reset an hour away is not worth holding the job for.
                raise self._error(method, path, response)
            self._sleep(wait)
        raise AssertionError("unreachable")

    @staticmethod
    def _error(method: str, path: str, response: httpx.Response) -> GitHubError:
        try:
            body = response.json()
            message = body.get("message", "") if isinstance(body, dict) else ""
            errors = body.get("errors") if isinstance(body, dict) else None
            if errors:
                message += f" {errors}"
        except ValueError:
            message = response.text[:200]
        return GitHubError(response.status_code, method, _short(path), message.strip() or response.reason_phrase,
                           response.headers.get("x-accepted-github-permissions"))

    def paginate(self, path: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a list endpoint, following ``Link: rel="next"``."""
        url: str | None = path
        query: dict[str, Any] | None = {**(params or {}), "per_page": 100}
        while url:
            response = self.request("GET", url, params=query)
            items = response.json()
            if not isinstance(items, list):
                raise GitHubError(response.status_code, "GET", _short(path), "expected a list")
            yield from items
            url = response.links.get("next", {}).get("url")
            query = None  # the next URL carries its own query

    # --- the calls we make --------------------------------------------------------------

    def list_issue_comments(self, owner: str, repo: str, number: int) -> Iterator[dict[str, Any]]:
        return self.paginate(f"/repos/{owner}/{repo}/issues/{number}/comments")

    def create_issue_comment(self, owner: str, repo: str, number: int, body: str) -> dict[str, Any]:
        return self.request("POST", f"/repos/{owner}/{repo}/issues/{number}/comments",
                            json={"body": body}).json()

    def update_issue_comment(self, owner: str, repo: str, comment_id: int, body: str) -> dict[str, Any]:
        return self.request("PATCH", f"/repos/{owner}/{repo}/issues/comments/{comment_id}",
                            json={"body": body}).json()

    def create_check_run(self, owner: str, repo: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", f"/repos/{owner}/{repo}/check-runs", json=payload).json()

    def update_check_run(self, owner: str, repo: str, check_run_id: int,
                         payload: dict[str, Any]) -> dict[str, Any]:
        return self.request("PATCH", f"/repos/{owner}/{repo}/check-runs/{check_run_id}",
                            json=payload).json()

    def create_status(self, owner: str, repo: str, sha: str, payload: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", f"/repos/{owner}/{repo}/statuses/{sha}", json=payload).json()

    def get_pull(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        return self.request("GET", f"/repos/{owner}/{repo}/pulls/{number}").json()

    # --- the automatic baseline (github/baseline.py); all need only read access ----------

    def compare_commits(self, owner: str, repo: str, base: str, head: str) -> dict[str, Any]:
        return self.request("GET", f"/repos/{owner}/{repo}/compare/{base}...{head}",
                            params={"per_page": 1}).json()

    def list_commits(self, owner: str, repo: str, sha: str, count: int) -> list[dict[str, Any]]:
        """The first ``count`` (at most 100) commits of history from ``sha``, newest first."""
        items = self.request("GET", f"/repos/{owner}/{repo}/commits",
                             params={"sha": sha, "per_page": count}).json()
        if not isinstance(items, list):
            raise GitHubError(200, "GET", f"/repos/{owner}/{repo}/commits", "expected a list")
        return items

    def list_artifacts(self, owner: str, repo: str, name: str) -> list[dict[str, Any]]:
        """The 100 newest artifacts called ``name`` (expired ones included)."""
        body = self.request("GET", f"/repos/{owner}/{repo}/actions/artifacts",
                            params={"name": name, "per_page": 100}).json()
        items = body.get("artifacts") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise GitHubError(200, "GET", f"/repos/{owner}/{repo}/actions/artifacts", "expected artifacts")
        return [a for a in items if isinstance(a, dict)]

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
