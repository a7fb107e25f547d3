"""The judge service of one evalcheck run: concurrency limit, cache, counters.

One ``JudgeService`` lives in ``ScoringContext.services.judge`` for the whole run, so the
``--judge-concurrency`` limit holds across every metric, case and run scored at once. A
sample is answered, in order, by: the same request already asked in this run (identical
agent outputs across runs are common), the on-disk cache, or the judge. Only answers the
metric could read are written to the disk cache, so an unreadable answer is asked again on
the next run instead of being replayed forever.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..safety.redact import Redactor
from .cache import JudgeCache, cache_key
from .adc import access_tokens
from .client import Backend, CallStats, GeminiClient, JudgeConfigError, JudgeError, JudgeReply
from .client import JudgeUnavailable, RetryPolicy, backend_from_env
from .providers import JudgeModel, MissingCredentials, UnknownJudgeModel, endpoint
from .providers import parse_judge_model
from .limits import JudgeGuard, JudgeLimits
from .meter import BudgetedGuard, admit, charge
from .slots import JudgeSlots
from ..models.usage import TokenBudget

T = TypeVar("T")

# Transport settings of google-genai's per-request http_options that evalcheck owns.
_OWN_HTTP_OPTIONS = ("base_url", "retry_options", "timeout")


class UnreadableReply(Exception):
    """The judge answered, but not in the requested shape. ``reply`` is what it said."""

    def __init__(self, reason: str, reply: str):
        super().__init__(reason)
        self.reason = reason
        self.reply = reply


@dataclass(frozen=True)
class JudgeRequest:
    """One prompt for the judge. ``config`` holds GenerateContentConfig fields (snake_case)."""

    model: str
    prompt: str
    config: dict[str, Any]


@dataclass
class JudgeStats(CallStats):
    samples: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    reused: int = 0  # answered by an identical request earlier in the same run
    models: set[str] = field(default_factory=set)
    # Judge calls the service kept refusing until the retries were spent, by what it said
    # last ("429 Too Many Requests"); and the first credentials problem (no call can work).
    refused: dict[str, int] = field(default_factory=dict)
    setup_error: str | None = None

    def used(self) -> bool:
        return self.samples > 0

    def as_metadata(self) -> dict[str, Any]:
        return {"calls": self.calls, "retries": self.retries,
                "failedRequests": self.failed_requests, "samples": self.samples,
                "cacheHits": self.cache_hits, "cacheMisses": self.cache_misses,
                "reusedInRun": self.reused, "tokens": self.total_tokens,
                "promptTokens": self.prompt_tokens, "outputTokens": self.output_tokens,
                "models": sorted(self.models),
                **({"refusals": {"calls": sum(self.refused.values()), "codes": dict(self.refused)}}
                   if self.refused else {}),
                **({"setupError": self.setup_error} if self.setup_error else {})}

    def line(self) -> str:
        """The counts as the results file has them (``cacheHits``, ``reusedInRun``): an
        identical request not sent again is no cache hit, and may have failed."""
        shared = (f", {self.reused:,} identical request{'s' if self.reused != 1 else ''} not "
                  "sent again" if self.reused else "")
        return (f"judge: {self.calls:,} call{'s' if self.calls != 1 else ''}, "
                f"{self.cache_hits:,} cache hit{'s' if self.cache_hits != 1 else ''}{shared}, "
                f"{self.total_tokens:,} tokens")


class SharesJudgeLimit(Protocol):
    """What holds the run's one limit on judge calls in flight (metrics/base.py:
    ScoringServices): a judge service takes it, or puts its own there."""

    judge_semaphore: Any


class JudgeService:
    def __init__(self, concurrency: int = 8, cache_dir: Path | None = None, *,
                 env: Mapping[str, str] | None = None, retry: RetryPolicy | None = None,
                 sleep: Callable[[float], Any] = asyncio.sleep,
                 shared: SharesJudgeLimit | None = None, limits: JudgeLimits | None = None):
        if concurrency < 1:
            raise ValueError("judge concurrency must be at least 1")
        self.concurrency = concurrency
        self.cache = JudgeCache(cache_dir) if cache_dir is not None else None
        self.retry = retry or RetryPolicy()
        self.stats = JudgeStats()
        self.guard = JudgeGuard(limits or JudgeLimits())
        self._env = env
        self._sleep = sleep
        # ScoringContext.services of the run: its judge_semaphore is the one limit on judge
        # calls in flight that every judge-backed metric (Gemini here, Vertex AI) shares.
        self._shared = shared
        # One client per (provider, base URL): Gemini's (provider None) or a ChatClient.
        self._clients: dict[tuple[str | None, str | None], Any] = {}
        self._slots: JudgeSlots | None = None  # the adaptive limit (and its history)
        self._memo: dict[str, asyncio.Future[tuple[JudgeReply, bool]]] = {}
        # Every credential a client was given or sent (API keys, header credentials, ADC
        # access tokens): redacted from results and logs (redact.py).
        self.credentials: set[str] = set()
        # --max-judge-tokens: once spent, no further call starts (judges/meter.py).
        self.budget: TokenBudget | None = None

    # ------------------------------------------------------------------ plumbing

    def _limiter(self) -> Any:
        """The run's adaptive limit on judge calls in flight (judges/slots.py): one for the
        service, whatever the event loop (it holds no loop's objects between calls); in
        ScoringContext.services, where the Vertex AI metrics take their slots too, a limit
        already there (another judge's) is the one used."""
        if self._slots is None:
            self._slots = JudgeSlots(self.concurrency)
        if self._shared is None:
            return self._slots
        if self._shared.judge_semaphore is None:
            self._shared.judge_semaphore = self._slots
        return self._shared.judge_semaphore

    def _client(self, base_url: str | None, judge: JudgeModel | None = None) -> Any:
        """The client of ``judge``'s provider (Gemini's without one); JudgeConfigError when it
        cannot be used (no credentials), the same error for every later call."""
        provider = judge.provider if judge is not None else None
        slot = (provider.name if provider else None, base_url)
        found = self._clients.get(slot)
        if found is None:
            env = self._env if self._env is not None else os.environ
            try:
                if provider is None:
                    backend: Backend = backend_from_env(env, base_url)
                    if backend.api_key:
                        self.credentials.add(backend.api_key)
                    found = GeminiClient(backend, sleep=self._sleep)
                else:
                    from .chat import ChatClient

                    try:
                        where = endpoint(provider, env, base_url)
                    except MissingCredentials as exc:
                        raise JudgeConfigError(f"no judge credentials: {exc}") from None
                    if where.key:
                        self.credentials.add(where.key)
                    found = ChatClient(where, sleep=self._sleep)
            except JudgeConfigError as exc:
                found = exc
            self._clients[slot] = found
        if isinstance(found, JudgeConfigError):
            raise found
        return found

    def ensure_client(self, base_url: str | None = None, model: str | None = None) -> None:
        """Raise JudgeConfigError now if no call could be made (e.g. missing credentials)."""
        self._client(base_url, _judge_model(model) if model else None)

    async def _ask(self, request: JudgeRequest, key: str) -> tuple[JudgeReply, bool]:
        """(reply, came from the network)."""
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                self.stats.cache_hits += 1
                return cached, False
        self.stats.cache_misses += 1
        self.stats.models.add(request.model)
        return await self.generate(request, self.stats), True

    async def generate(self, request: JudgeRequest, stats: CallStats) -> JudgeReply:
        """One fresh answer to ``request``, counted in ``stats``: no cache, no reuse of an
        identical request (the user simulator: every run's simulated user is its own
        sample). Same credentials, base URL, retries and concurrency limit as judge samples.
        Raises JudgeConfigError (credentials) or JudgeError."""
        http = dict(request.config.get("http_options") or {})
        policy = RetryPolicy.from_http_options(http, self.retry)
        config = dict(request.config)
        rest = {k: v for k, v in http.items() if k not in _OWN_HTTP_OPTIONS}
        self.credentials.update(header_credentials(rest.get("headers")))
        if rest:
            config["http_options"] = rest
        else:
            config.pop("http_options", None)
        judge = _judge_model(request.model)
        client = self._client(http.get("base_url"), judge)
        admit(self.budget)  # and again once a slot is free: BudgetedGuard
        guard = self.guard if self.budget is None else BudgetedGuard(self.guard, self.budget)
        try:
            reply = await client.generate(judge.model, request.prompt, config, policy, stats,
                                          self._limiter(), guard)
            charge(self.budget, request.model, reply.prompt_tokens, reply.output_tokens)
            return reply
        finally:  # the access token this call sent (a refresh may have replaced the last one)
            self.credentials.update(access_tokens([client.google_credentials]))

    # ------------------------------------------------------------------ API

    async def sample(self, request: JudgeRequest, index: int, parse: Callable[[str], T]) -> T:
        """Sample number ``index`` of ``request``, read by ``parse``.

        Raises JudgeError when the judge cannot be reached, UnreadableReply (from ``parse``)
        when its answer cannot be read.
        """
        self.stats.samples += 1
        key = cache_key(request.model, request.prompt, request.config, index,
                        **self._provider_key(request))
        future = self._memo.get(key)
        owner = future is None
        if future is None:
            future = asyncio.ensure_future(self._ask(request, key))
            self._memo[key] = future
        else:
            self.stats.reused += 1
        try:
            reply, fresh = await asyncio.shield(future)
        except JudgeError as exc:
            if owner:  # counted once, not for each identical request it answered
                self._note_failure(exc)
            if self._memo.get(key) is future:
                del self._memo[key]  # a later identical request may try again
            raise
        try:
            if not reply.text.strip():
                raise UnreadableReply("the judge returned no text (finish reason: "
                                      f"{reply.finish_reason or 'none given'})", reply.text)
            value = parse(reply.text)
        except UnreadableReply:
            if self._memo.get(key) is future:
                del self._memo[key]
            raise
        if fresh and owner and self.cache is not None:
            self.cache.put(key, self._without_credentials(reply))
        return value

    def _provider_key(self, request: JudgeRequest) -> dict[str, str]:
        """What else decides a provider/model judge's answer: the provider and, for the
        providers whose model names are the server's own (openai/ on any OpenAI-compatible
        server, Ollama, an Azure resource's deployments), the server it was sent to. A proxy's
        base URL for a hosted provider (GROQ_API_BASE) does not change the model. None for
        Gemini: its keys are as before."""
        judge = _judge_model(request.model)
        if judge.provider is None:
            return {}
        if judge.provider.name not in _SERVER_NAMED_MODELS:
            return {"provider": judge.provider.name}
        env = self._env if self._env is not None else os.environ
        http = request.config.get("http_options") or {}
        base = http.get("base_url") if isinstance(http, dict) else None
        base = base or next((env[v] for v in judge.provider.base_vars if env.get(v)), None)
        return {"provider": judge.provider.name, **({"base_url": base.rstrip("/")} if base else {})}

    def _note_failure(self, exc: JudgeError) -> None:
        if isinstance(exc, JudgeUnavailable):
            self.stats.refused[exc.code] = self.stats.refused.get(exc.code, 0) + 1
        elif isinstance(exc, JudgeConfigError) and self.stats.setup_error is None:
            self.stats.setup_error = str(exc)

    def _without_credentials(self, reply: JudgeReply) -> JudgeReply:
        """The reply as the disk cache may keep it: a judge echoing a key is not stored."""
        text = Redactor(self.credentials).text(reply.text)
        return reply if text == reply.text else dataclasses.replace(reply, text=text)

    async def aclose(self) -> None:
        for client in self._clients.values():
            if not isinstance(client, JudgeConfigError):
                await client.aclose()
        self._clients.clear()

    def line(self) -> str:
        """The terminal line: ``judge: 12 calls, 25 cache hits, 5 identical requests not
        sent again, 4,512 tokens``."""
        text = self.stats.line()
        if self.cache is not None and self.cache.write_error:
            text += f" (judge cache not written: {self.cache.write_error})"
        if self.guard.stopped:
            text += f" ({self.guard.stopped})"
        return text

    def metadata(self) -> dict[str, Any]:
        data = self.stats.as_metadata()
        data["concurrency"] = self.concurrency
        if self._slots is not None:
            data["adaptiveConcurrency"] = self._slots.metadata()
        if self.cache is not None:
            data["cacheDir"] = str(self.cache.directory)
            if self.cache.write_error:
                data["cacheWriteError"] = self.cache.write_error
        if self.guard.stopped:
            data["stopped"] = self.guard.stopped
        return data


_SERVER_NAMED_MODELS = ("openai", "azure", "ollama", "ollama_chat")


def _judge_model(name: str) -> JudgeModel:
    """The judge model of a request (checked when the criteria were read: a name no judge
    can call reaches here only from a caller that did not check it)."""
    try:
        return parse_judge_model(name)
    except UnknownJudgeModel as exc:
        raise JudgeConfigError(str(exc)) from None


_CREDENTIAL_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|cookie", re.IGNORECASE)


def header_credentials(headers: Any) -> list[str]:
    """Values of credential headers a judge_model_config sends (``Authorization: Bearer x``
    gives ``x`` too)."""
    if not isinstance(headers, Mapping):
        return []
    found = []
    for name, value in headers.items():
        if isinstance(value, str) and _CREDENTIAL_HEADER.search(str(name)):
            found.append(value)
            scheme, _, rest = value.partition(" ")
            if rest and scheme.lower() in ("bearer", "basic", "token"):
                found.append(rest)
    return found


def judge_service(context: Any) -> JudgeService:
    """The run's judge service, created on first use from the context's judge options."""
    services = context.services  # metrics/base.py: ScoringServices
    service = services.judge
    if service is None:
        service = services.judge = JudgeService(concurrency=services.judge_concurrency or 8,
                                                cache_dir=services.judge_cache, shared=services,
                                                limits=services.judge_limits)
    return service
