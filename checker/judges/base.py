"""What every judge client shares (Gemini's, the provider/model judges'): the errors, the
retry policy, an answer and the traffic counters. Pure."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

RETRY_STATUSES = (408, 429, 500, 502, 503, 504)


class Guard(Protocol):
    """What bounds the run's judging (judges.limits.JudgeGuard): asked before each request."""

    def left(self) -> float:
        """Seconds left for a request; raises JudgeError once judging is over."""

    def answered(self) -> None: ...

    def timed_out(self, seconds: float) -> None: ...


class JudgeError(Exception):
    """A judge call failed for good (after retries, or not retryable)."""


class JudgeConfigError(JudgeError):
    """The judge cannot be used at all: missing credentials, SDK not installed, bad model."""


class JudgeCredentialsRefused(JudgeConfigError):
    """The judge service refused the credentials (HTTP 401 or 403): no call can succeed."""


class JudgeUnavailable(JudgeError):
    """The judge service kept refusing or failing the call (429, 5xx, timeouts, dropped
    connections) until the retries were spent: not the agent's fault, and no verdict.
    ``code``: what it said last ("429 RESOURCE_EXHAUSTED", "timeout", "connection")."""

    def __init__(self, message: str, code: str):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class RetryPolicy:
    """How failed judge calls are retried. ``attempts`` counts the first call too."""

    attempts: int = 6
    initial_delay: float = 2.0
    max_delay: float = 60.0
    exp_base: float = 2.0
    jitter: float = 1.0  # up to this many seconds added at random to each backoff
    timeout: float = 180.0  # seconds one attempt may take
    statuses: tuple[int, ...] = RETRY_STATUSES

    def backoff(self, retry: int, rng: random.Random) -> float:
        """Delay before retry number ``retry`` (0-based), without any server hint."""
        base = min(self.max_delay, self.initial_delay * self.exp_base ** retry)
        return min(self.max_delay, base + rng.uniform(0, self.jitter)) if self.jitter else base

    @classmethod
    def from_http_options(cls, options: Mapping[str, Any] | None,
                          base: RetryPolicy | None = None) -> RetryPolicy:
        """Apply google-genai ``http_options`` (``retry_options``, ``timeout`` in ms) to ``base``."""
        policy = base or cls()
        if not options:
            return policy
        changes: dict[str, Any] = {}
        retry = options.get("retry_options") or {}
        for ours, theirs in (("attempts", "attempts"), ("initial_delay", "initial_delay"),
                             ("max_delay", "max_delay"), ("exp_base", "exp_base"),
                             ("jitter", "jitter")):
            if retry.get(theirs) is not None:
                changes[ours] = max(1, int(retry[theirs])) if ours == "attempts" else float(retry[theirs])
        if retry.get("http_status_codes"):
            changes["statuses"] = tuple(int(c) for c in retry["http_status_codes"])
        if options.get("timeout"):
            changes["timeout"] = float(options["timeout"]) / 1000.0
        return cls(**{**policy.__dict__, **changes})


@dataclass
class JudgeReply:
    """The text of a judge answer and what it cost."""

    text: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    thoughts: bool = False  # the answer had thought parts (e.g. only thoughts, no text)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JudgeReply:
        return cls(text=str(data["text"]), finish_reason=data.get("finish_reason"),
                   prompt_tokens=int(data.get("prompt_tokens") or 0),
                   output_tokens=int(data.get("output_tokens") or 0),
                   total_tokens=int(data.get("total_tokens") or 0),
                   thoughts=bool(data.get("thoughts")))


@dataclass
class CallStats:
    """Counters of one run's judge traffic (every HTTP request is a call)."""

    calls: int = 0
    retries: int = 0
    failed_requests: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    retry_delays: list[float] = field(default_factory=list)
