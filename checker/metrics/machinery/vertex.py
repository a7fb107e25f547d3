"""Shared plumbing of the Vertex AI evaluation metrics (safety, coherence, multi-turn).

Calls go through the real google-cloud-aiplatform client (``agentplatform.Client``, the
package ADK 2.13 uses; ``vertexai.Client`` is its deprecated alias) and its public
``client.evals.evaluate_instances``, which POSTs the REST method
``[projects/{p}/locations/{l}/]:evaluateInstances`` on ``aiplatform.googleapis.com``.
The instance (built in vertex_instances.py) is the one ``client.evals.evaluate`` builds for
a dataset row (``_evals_metric_handlers._build_evaluation_instance``), so the service scores
the same input. We do not call ``evaluate()`` itself because (as of aiplatform 2.7) it turns every
HTTP failure into an ``error_message`` string, retries with fixed sleeps of up to ~15 s
that ignore Retry-After, runs its own 100-thread pool, and resolves COHERENCE by
downloading a prompt from a GCS bucket at run time. The REST method scores one instance
per request (batching exists only as the asynchronous ``evaluateDataset`` operation,
which writes to Cloud Storage), so a single-turn metric makes one request per
invocation and a multi-turn metric one per run.

Credentials, as ADK reads them, with one deliberate difference (genai's own rule):
``GOOGLE_CLOUD_PROJECT`` + ``GOOGLE_CLOUD_LOCATION`` with application default credentials
win over ``GOOGLE_API_KEY``, because that key is usually a Gemini API key for the agent.
``GOOGLE_API_KEY`` alone is sent as a Vertex AI express-mode key (ADK does the same).
``GOOGLE_VERTEX_BASE_URL`` (the genai SDK's variable) points the client elsewhere, e.g.
at a proxy or, in tests, at a local fake of the service.

Everything heavy (agentplatform, pandas, litellm) is imported inside a worker thread, so
importing this module is cheap and the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base import ScoringContext, ScoringServices

BACKEND_PROJECT = "vertex-ai"
BACKEND_EXPRESS = "vertex-ai-express-mode"

# HTTP codes worth another try: timeouts, rate limits, server-side failures.
RETRYABLE = frozenset({408, 429})

# Short on purpose: the terminal report shows the start of an error line.
CREDENTIALS_HELP = (
    "set GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION with application default "
    "credentials, or GOOGLE_API_KEY (a Vertex AI express-mode key)")


class VertexError(RuntimeError):
    """The Vertex AI evaluation service could not score; the message says why and what to do.
    ``access``: for want of usable credentials (missing, refused, not refreshable)."""

    def __init__(self, message: str, *, access: bool = False):
        super().__init__(message)
        self.access = access


# ---------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    project: str | None = None
    location: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never printed
    base_url: str | None = None

    @property
    def backend(self) -> str:
        return BACKEND_EXPRESS if self.api_key else BACKEND_PROJECT


def settings_from_env(env: Mapping[str, str] | None = None) -> Settings:
    """Which Vertex AI credentials to use; raises VertexError naming what to set."""
    env = os.environ if env is None else env
    project = (env.get("GOOGLE_CLOUD_PROJECT") or "").strip() or None
    location = (env.get("GOOGLE_CLOUD_LOCATION") or "").strip() or None
    api_key = (env.get("GOOGLE_API_KEY") or "").strip() or None
    base_url = (env.get("GOOGLE_VERTEX_BASE_URL") or "").strip() or None
    if project and location:
        return Settings(project=project, location=location, base_url=base_url)
    if api_key:
        return Settings(api_key=api_key, base_url=base_url)
    if project or location:
        missing = "GOOGLE_CLOUD_LOCATION" if project else "GOOGLE_CLOUD_PROJECT"
        raise VertexError(f"Vertex AI metrics need {missing} as well: {CREDENTIALS_HELP}",
                          access=True)
    raise VertexError(f"Vertex AI metrics need credentials: {CREDENTIALS_HELP}", access=True)


# ---------------------------------------------------------------- retries


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter on 408/429/5xx and transport errors.

    Put one in ``context.services.vertex_retry`` to change it (tests pass a recording
    ``sleep`` so that no test waits).
    """

    attempts: int = 6
    initial_delay: float = 1.0
    max_delay: float = 60.0
    # Longest Retry-After honoured: a server asking for more would stall the whole job.
    max_retry_after: float = 120.0
    timeout: float = 180.0  # seconds for one HTTP request
    sleep: Callable[[float], Awaitable[None]] = _sleep

    def backoff(self, attempt: int, rng: random.Random) -> float:
        base = min(self.max_delay, self.initial_delay * 2 ** attempt)
        return base / 2 + rng.uniform(0, base / 2)  # "equal jitter": never 0, never herds


def retry_after_seconds(headers: Any, now: float | None = None) -> float | None:
    """Retry-After as seconds (delta-seconds or an HTTP date), None if absent or bad."""
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


# ---------------------------------------------------------------- the client


def _make_client(settings: Settings) -> tuple[Any, Any]:
    """The client and, without an express-mode key, the credentials it sends."""
    # litellm (imported by the evals module) fetches a price list from the internet on
    # import unless told not to; CI has no network and we never want that call.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import agentplatform
        import agentplatform._genai.evals  # noqa: F401  (pandas etc.: fail here, clearly)
    except ImportError as exc:
        raise VertexError(
            "Vertex AI metrics need google-cloud-aiplatform with pandas, tqdm and pyyaml: "
            "pip install 'google-cloud-aiplatform>=2.7,<3' pandas tqdm pyyaml (what evalcheck-adk's "
            "extra vertex installs)") from exc
    # Pointing the client elsewhere is genai's supported http_options.base_url; with a
    # project and location the path stays projects/{p}/locations/{l}:evaluateInstances.
    http_options: dict[str, Any] = {}
    if settings.base_url:
        http_options["base_url"] = settings.base_url
    if settings.api_key:
        return agentplatform.Client(api_key=settings.api_key, http_options=http_options or None), None
    credentials = _credentials(settings)
    return agentplatform.Client(credentials=credentials, project=settings.project,
                                location=settings.location,
                                http_options=http_options or None), credentials


def _credentials(settings: Settings) -> Any:
    # Ours, not the client's own lookup: their access token is then known and redacted from
    # results and logs (judges/adc.py, vertex_access_tokens).
    from ...judges.adc import NoApplicationCredentials, application_default_credentials

    try:
        credentials = application_default_credentials()
    except NoApplicationCredentials as exc:
        raise VertexError(f"no application default credentials for project {settings.project} "
                          f"({_scrub(str(exc), settings)}); {CREDENTIALS_HELP}", access=True) from None
    return credentials


async def _client(context: ScoringContext, settings: Settings) -> Any:
    # One client per scoring job and settings; created once even when many metrics ask
    # at the same moment (no await between the lookup and the store).
    clients = context.services.vertex_clients
    task = clients.get(settings)
    if task is None:
        task = clients[settings] = asyncio.ensure_future(asyncio.to_thread(_make_client, settings))
    client, _ = await task
    return client


def vertex_access_tokens(services: ScoringServices) -> list[str]:
    """The access tokens of the scoring job's Vertex AI clients (for the caller to redact)."""
    from ...judges.adc import access_tokens

    made = [t.result() for t in services.vertex_clients.values()
            if t.done() and not t.cancelled() and t.exception() is None]
    return access_tokens(credentials for _, credentials in made)


# ---------------------------------------------------------------- requests


@dataclass(frozen=True)
class MetricSpec:
    """What to ask Vertex for: a predefined metric by name, or an LLM metric by prompt."""

    name: str
    prompt_template: str | None = None


@dataclass
class Verdict:
    score: float | None
    explanation: str | None
    rubric_verdicts: list[dict[str, Any]]
    error: str | None  # a per-instance error the service reported inside a 200 answer
    requests: int = 1  # HTTP requests it took, retries included


def _sdk_metric(spec: MetricSpec) -> Any:
    from agentplatform import types

    if spec.prompt_template is not None:
        return types.LLMMetric(name=spec.name, prompt_template=spec.prompt_template)
    return types.Metric(name=spec.name)


def _call(client: Any, spec: MetricSpec, instance: dict[str, Any], timeout: float) -> Verdict:
    """The blocking SDK call, run in a worker thread."""
    from agentplatform import types
    from pydantic import ValidationError

    try:
        sdk_instance = types.EvaluationInstance.model_validate(instance)
    except ValidationError as exc:
        # e.g. a tool declaration in app_details that is not a genai Tool
        raise VertexError(f"the run cannot be sent to Vertex AI: {exc}") from None
    response = client.evals.evaluate_instances(metric_config={
        "metrics": [_sdk_metric(spec)],
        "instance": sdk_instance,
        "config": {"http_options": {"timeout": int(timeout * 1000)}},
    })
    results = response.metric_results or []
    if not results:
        return Verdict(None, None, [], "the service returned no metric result")
    result = results[0]
    error = None
    if result.error is not None and (result.error.code or result.error.message):
        error = f"{result.error.code or ''} {result.error.message or ''}".strip()
    verdicts = []
    for index, verdict in enumerate(result.rubric_verdicts or []):
        rubric = verdict.evaluated_rubric
        description = None
        if rubric and rubric.content and rubric.content.property:
            description = rubric.content.property.description
        verdicts.append({
            "rubric": description or (rubric.rubric_id if rubric else None) or f"rubric_{index}",
            # Vertex omits `verdict` when a rubric is not met.
            "verdict": bool(verdict.verdict),
            "reasoning": verdict.reasoning,
        })
    return Verdict(result.score, result.explanation, verdicts, error)


def _scrub(text: str, settings: Settings) -> str:
    return text.replace(settings.api_key, "***") if settings.api_key else text


def _refusal_help(settings: Settings) -> str:
    if settings.api_key:
        return ("GOOGLE_API_KEY was sent as a Vertex AI express-mode key; a Gemini API "
                "(AI Studio) key is not accepted by the Vertex AI evaluation service: set "
                "GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION with application default "
                "credentials instead")
    return (f"check that the Vertex AI API is enabled in project {settings.project} and that "
            "the application default credentials may call it (role roles/aiplatform.user)")


def _is_transport_error(exc: BaseException) -> bool:
    try:
        import httpx
    except ImportError:  # pragma: no cover - httpx is a dependency of evalcheck
        return False
    return isinstance(exc, httpx.TransportError)


async def evaluate(context: ScoringContext, spec: MetricSpec,
                   instance: dict[str, Any]) -> tuple[Verdict, Settings]:
    """One evaluateInstances request, retried; raises VertexError when it cannot score."""
    settings = settings_from_env()
    services = context.services
    policy: RetryPolicy = services.vertex_retry or RetryPolicy()
    if services.vertex_rng is None:
        services.vertex_rng = random.Random()
    rng = services.vertex_rng
    from ...judges.slots import CallSlot, JudgeSlots

    if services.judge_semaphore is None:  # the judges' adaptive limit, shared
        services.judge_semaphore = JudgeSlots(services.judge_concurrency)
    semaphore = services.judge_semaphore
    client = await _client(context, settings)
    from google.auth import exceptions as auth_errors
    from ...judges.meter import admit, count_vertex_instances

    judge = services.judge
    budget = getattr(judge, "budget", None)  # --max-judge-tokens: a spent budget starts none
    from google.genai import errors as genai_errors

    async with CallSlot(semaphore) as slot:  # held through the backoffs
        last = ""
        for attempt in range(policy.attempts):
            delay: float | None = None
            async with slot.attempt():
                admit(budget)
                try:
                    verdict = await asyncio.to_thread(_call, client, spec, instance, policy.timeout)
                    verdict.requests = attempt + 1
                    count_vertex_instances(1)  # the answer tells no tokens: the instance is counted
                    return verdict, settings
                except genai_errors.APIError as exc:
                    code = exc.code or 0
                    last = _scrub(f"{code} {exc.status or ''}: {exc.message or exc.details}", settings)
                    if code in (401, 403):
                        raise VertexError(f"Vertex AI refused the request ({last}); "
                                          f"{_refusal_help(settings)}", access=True) from None
                    if code not in RETRYABLE and code < 500:
                        raise VertexError(f"Vertex AI rejected the request ({last})") from None
                    hinted = retry_after_seconds(getattr(exc.response, "headers", None))
                    if isinstance(semaphore, JudgeSlots):  # fewer judge calls at once for a while
                        semaphore.note_refusal(hinted)
                    if hinted is not None:
                        delay = min(hinted, policy.max_retry_after)
                except auth_errors.RefreshError as exc:
                    raise VertexError(f"the application default credentials could not be "
                                      f"refreshed ({_scrub(str(exc), settings)}); "
                                      f"{CREDENTIALS_HELP}", access=True) from None
                except Exception as exc:
                    if not (_is_transport_error(exc) or isinstance(exc, auth_errors.TransportError)):
                        raise
                    last = _scrub(f"{type(exc).__name__}: {exc}", settings)
            if attempt + 1 < policy.attempts:
                await policy.sleep(policy.backoff(attempt, rng) if delay is None else delay)
        raise VertexError(f"Vertex AI did not answer after {policy.attempts} attempts "
                          f"(last: {last})")
