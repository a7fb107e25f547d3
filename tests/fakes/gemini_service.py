"""The fake Gemini API's model service (gemini_api.py serves it over HTTP): its quota, storm
windows, latency and counters, and Google's own error bodies."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.gemini_script import ModelRequest, Rule, answer_parts, response_body

_STATUS_NAMES = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
                 504: "DEADLINE_EXCEEDED"}
QUOTA_MESSAGE = ("You exceeded your current quota, please check your plan and billing details. "
                 "For more information on this error, head to: "
                 "https://ai.google.dev/gemini-api/docs/rate-limits.")
_STORM_MESSAGES = {429: "Resource has been exhausted (e.g. check quota).",
                   503: "The model is overloaded. Please try again later.",
                   500: "An internal error has occurred. Please retry or report in "
                        "https://developers.generativeai.google/guide/troubleshooting",
                   504: "The request timed out. Please try again."}


@dataclass(frozen=True)
class Quota:
    """Calls accepted per second (in any 1-second window) and in flight at once (None: no
    limit); ``retry_delay`` is the RetryInfo delay a 429 carries (None: no RetryInfo)."""

    per_second: float | None = None
    in_flight: int | None = None
    retry_delay: float | None = 2.0


@dataclass(frozen=True)
class Storm:
    """From ``start`` to ``end`` seconds after the first model call, ``share`` of the calls
    are refused with ``status`` (429, 500, 503 or 504)."""

    start: float
    end: float
    status: int = 429
    share: float = 1.0

    def __post_init__(self) -> None:
        if self.status not in _STORM_MESSAGES:
            raise ValueError(f"a storm refuses with 429, 500, 503 or 504, not {self.status}")


@dataclass(frozen=True)
class ServiceConfig:
    """How the service answers. ``latency`` (+ up to ``jitter``, uniformly) is each served
    call's time; a loaded service gets slower: ``load_latency`` more seconds for each call in
    flight beyond ``knee``. With no rule matching, ``default_reply`` is answered, or (None) a
    400 naming the request, so a test never passes on an answer it did not script."""

    rules: tuple[Rule, ...] = ()
    default_reply: str | None = None
    latency: float = 0.0
    jitter: float = 0.0
    load_latency: float = 0.0
    knee: int = 0
    quota: Quota = field(default_factory=Quota)
    storms: tuple[Storm, ...] = ()
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"rules": [r.to_json() for r in self.rules], "default_reply": self.default_reply,
                "latency": self.latency, "jitter": self.jitter,
                "load_latency": self.load_latency, "knee": self.knee,
                "quota": vars(self.quota), "storms": [vars(s) for s in self.storms],
                "seed": self.seed}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServiceConfig:
        data = dict(data)
        rules = tuple(Rule.from_json(r) for r in data.pop("rules", []))
        quota = Quota(**data.pop("quota", {}))
        storms = tuple(Storm(**s) for s in data.pop("storms", []))
        return cls(rules=rules, quota=quota, storms=storms, **data)


@dataclass(frozen=True)
class Stats:
    """What the service saw; times are seconds since the first model call."""

    calls: int
    served: int
    refused: int
    refused_by: dict[str, int]  # "quota_rate", "quota_in_flight", "storm_429", "storm_503", ...
    max_in_flight: int
    in_flight: int
    served_at: tuple[tuple[float, float], ...]  # (start, end) of each served call
    refused_at: tuple[float, ...]
    # time.monotonic() of the first model call (CLOCK_MONOTONIC is one clock for every process
    # on the machine, so a benchmark can tell the time before the first call); None before it
    first_call_at: float | None = None

    @property
    def refused_share(self) -> float:
        return self.refused / self.calls if self.calls else 0.0

    def busiest_second(self) -> int:
        """The most calls accepted within any 1-second window."""
        starts = sorted(start for start, _ in self.served_at)
        most, low = 0, 0
        for high, start in enumerate(starts):
            while starts[low] <= start - 1.0:
                low += 1
            most = max(most, high - low + 1)
        return most

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "served_at": [list(p) for p in self.served_at],
                "refused_at": list(self.refused_at)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Stats:
        return cls(**{**data, "served_at": tuple(tuple(p) for p in data["served_at"]),
                      "refused_at": tuple(data["refused_at"])})


def error_body(status: int, message: str, retry_delay: float | None = None,
               quota: dict[str, Any] | None = None) -> dict[str, Any]:
    """Google's error body (google.rpc.Status), as the Gemini API writes it."""
    error: dict[str, Any] = {"code": status, "message": message,
                             "status": _STATUS_NAMES.get(status, "UNKNOWN")}
    details = []
    if quota is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                        "violations": [quota]})
    if retry_delay is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": f"{retry_delay:g}s"})
    if details:
        error["details"] = details
    return {"error": error}


class ModelService:
    """The model service's state; runs on the server's event loop (``stats`` and
    ``configure`` may be called from other threads)."""

    def __init__(self, config: ServiceConfig, responder: Callable[[ModelRequest], Any] | None):
        self.config = config
        self.responder = responder  # a Python function instead of rules (thread mode only)
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.generation = getattr(self, "generation", 0) + 1  # calls before a reset: not counted
            self.t0: float | None = None
            self.calls = self.served = 0
            self.refused_by: dict[str, int] = {}
            self.in_flight = self.max_in_flight = 0
            self.served_at: list[tuple[float, float]] = []
            self.refused_at: list[float] = []
            self.accepted: deque[float] = deque()
            self.random = random.Random(self.config.seed)

    def configure(self, config: ServiceConfig) -> None:
        with self._lock:
            self.config = config

    def stats(self) -> Stats:
        with self._lock:
            return Stats(calls=self.calls, served=self.served,
                         refused=sum(self.refused_by.values()), refused_by=dict(self.refused_by),
                         max_in_flight=self.max_in_flight, in_flight=self.in_flight,
                         served_at=tuple(self.served_at), refused_at=tuple(self.refused_at),
                         first_call_at=self.t0)

    def _refusal(self, now: float) -> tuple[str, int, dict[str, Any]] | None:
        """Why this call is refused, or None (called under the lock)."""
        config = self.config
        assert self.t0 is not None
        for storm in config.storms:
            if storm.start <= now - self.t0 < storm.end and self.random.random() < storm.share:
                delay = config.quota.retry_delay if storm.status == 429 else None
                return (f"storm_{storm.status}", storm.status,
                        error_body(storm.status, _STORM_MESSAGES[storm.status], delay))
        quota = config.quota
        while self.accepted and self.accepted[0] <= now - 1.0:
            self.accepted.popleft()
        if quota.in_flight is not None and self.in_flight >= quota.in_flight:
            return ("quota_in_flight", 429, error_body(429, QUOTA_MESSAGE, quota.retry_delay, {
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_concurrent_requests",
                "quotaId": "GenerateContentConcurrentRequestsPerProjectPerModel",
                "quotaValue": str(quota.in_flight)}))
        if quota.per_second is not None and len(self.accepted) >= quota.per_second:
            return ("quota_rate", 429, error_body(429, QUOTA_MESSAGE, quota.retry_delay, {
                "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                "quotaId": "GenerateRequestsPerSecondPerProjectPerModel",
                "quotaValue": f"{quota.per_second:g}"}))
        return None

    async def generate(self, request: ModelRequest) -> tuple[int, dict[str, Any]]:
        now = time.monotonic()
        with self._lock:
            if self.t0 is None:
                self.t0 = now
            self.calls += 1
            refusal = self._refusal(now)
            if refusal is not None:
                reason, status, body = refusal
                self.refused_by[reason] = self.refused_by.get(reason, 0) + 1
                self.refused_at.append(round(now - self.t0, 4))
                return status, body
            self.accepted.append(now)
            generation, t0 = self.generation, self.t0
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            config = self.config
            latency = config.latency + self.random.uniform(0, config.jitter) \
                + config.load_latency * max(0, self.in_flight - config.knee)
        try:
            if latency > 0:
                await asyncio.sleep(latency)
            return self._answer(request, config)
        finally:
            with self._lock:
                if self.generation == generation:
                    self.in_flight -= 1
                    self.served += 1
                    self.served_at.append((round(now - t0, 4), round(time.monotonic() - t0, 4)))

    def _answer(self, request: ModelRequest, config: ServiceConfig) -> tuple[int, dict[str, Any]]:
        if self.responder is not None:
            parts = self.responder(request)
        else:
            parts = answer_parts(config.rules, request)
            if parts is None and config.default_reply is not None:
                parts = [{"text": config.default_reply}]
        if parts is None:
            return 400, error_body(400, "fake gemini_api: no rule matches this request; the user "
                                   "said: " + request.user_text[-300:])
        return 200, response_body(request, parts)
