"""Model calls the service refused, retried in the bridge as ADK's eval retries them, but after
the delay the service asks for, and told to the checker at once.

ADK's AgentEvaluator gives every model call google-genai's retry options unless the agent sets
its own (``EnsureRetryOptionsPlugin``: 7 attempts, 5 s doubling up to 120 s). google-genai's
retry ignores the service's ``RetryInfo`` and tells no one: under a quota, every refused call
waited 5 s or more, and the checker's concurrency limiter never heard of the refusals, so it
kept as many runs in flight as before and the service kept refusing. This plugin takes the
same calls (those the agent gave no retry options; not streaming ones, which the plugin cannot
replay), asks google-genai for one attempt only, and on a refusal (refusals.py: 429, 5xx, a
reset connection) tells the checker (``{"type": "refused"}``, when its start message asked
with ``"tellRefusals": true``), waits the delay the service asked for (a fifth more at most,
drawn per call) or ADK's backoff without one, and calls the model again with the same request,
up to ADK's 7 attempts. What the agent answers is the same as under ADK's retries: only the
waits differ. Past the attempts the refusal ends the run, unavailable, as before. A refusal
that states a quota of requests per second or minute paces that model's later calls, every
run's (pacing.py); the checker is then told the refusal is paced (``"paced": true``): more
runs at once send no more calls of that model, so its limiter need not cut for it.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections.abc import Callable
from typing import Any

from .pacing import learn_quota, wait_turn
from .refusals import service_refusal

# ADK's eval retry options (google/adk/evaluation/_retry_options_utils.py) and tenacity's
# wait_exponential_jitter, which google-genai uses with them.
ATTEMPTS = 7
INITIAL_DELAY = 5.0
MAX_DELAY = 120.0
EXP_BASE = 2.0
JITTER = 1.0
# A delay the service asked for is lengthened by up to this share, so that calls told the same
# delay do not all come back at once (as the checker does for whole runs).
ASKED_JITTER = 0.2

Tell = Callable[[dict[str, Any], bool], None]  # (the refusal, whether the bridge paces it)
# How the run being served tells the checker of a refused call it retries: set by the run's
# task (its context is the one ADK's callbacks run in); None when the checker did not ask.
TELL: contextvars.ContextVar[Tell | None] = contextvars.ContextVar("evalcheck_tell", default=None)
# Whether the run's latest model call waited its turn (or needed none), rather than skip a
# queue too long (pacing.py: MAX_WAIT): set before the call, read when it is refused, in the
# run's context (a call's callbacks run in the task that makes it).
TOOK_TURN: contextvars.ContextVar[bool] = contextvars.ContextVar("evalcheck_took_turn",
                                                                  default=True)


def delay(refusal: dict[str, Any], attempt: int, rng: random.Random) -> float:
    """The wait before attempt ``attempt + 1`` of a call refused ``attempt`` times."""
    asked = refusal.get("retryAfter")
    if isinstance(asked, (int, float)) and asked >= 0:
        return float(asked) * (1.0 + rng.uniform(0.0, ASKED_JITTER))
    return min(MAX_DELAY, INITIAL_DELAY * EXP_BASE ** (attempt - 1)) + rng.uniform(0.0, JITTER)


def refusal_retries(rng: random.Random | None = None,
                    sleep: Callable[[float], Any] = asyncio.sleep) -> Any:
    """The plugin (an ADK BasePlugin; built here so that google-adk is imported only when
    runs are served)."""
    from google.adk.plugins.base_plugin import BasePlugin
    from google.genai import types

    draw = rng or random.Random()

    class RefusalRetries(BasePlugin):
        def __init__(self) -> None:
            super().__init__(name="evalcheck_refusal_retries")
            # The options this plugin gives a call: it retries exactly the calls that have
            # these very options (identity: an agent's own attempts=1 is the agent's).
            self.ours = types.HttpRetryOptions(attempts=1)

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
            # every call of a paced model waits its turn, streaming ones too
            TOOK_TURN.set(await wait_turn(llm_request))
            if _streaming(callback_context) or _model(callback_context) is None:
                return None  # ADK's own plugin, after this one, gives it ADK's options
            config = llm_request.config = llm_request.config or types.GenerateContentConfig()
            http = config.http_options = config.http_options or types.HttpOptions()
            if http.retry_options is None:
                http.retry_options = self.ours
            return None

        async def on_model_error_callback(self, *, callback_context: Any, llm_request: Any,
                                          error: Exception) -> Any:
            http = getattr(getattr(llm_request, "config", None), "http_options", None)
            refusal = service_refusal(error)
            model = _model(callback_context)
            paced = refusal is not None and learn_quota(llm_request, error) and TOOK_TURN.get()
            if refusal is None or getattr(http, "retry_options", None) is not self.ours \
                    or model is None:
                return None  # the agent's error, or a call the agent retries its own way
            tell = TELL.get()
            for attempt in range(1, ATTEMPTS):
                if tell is not None:
                    tell(refusal, paced)
                await sleep(delay(refusal, attempt, draw))
                took_turn = await wait_turn(llm_request)
                try:
                    answer = None
                    async for response in model.generate_content_async(llm_request, stream=False):
                        answer = response  # not streaming: one response
                    return answer
                except Exception as again:
                    refusal = service_refusal(again)
                    if refusal is None:
                        raise
                    paced = learn_quota(llm_request, again) and took_turn
            return None  # refused ATTEMPTS times: the run ends unavailable

    return RefusalRetries()


def _streaming(callback_context: Any) -> bool:
    """A streaming or live call: its answer comes in parts, which a retry here cannot give."""
    context = getattr(callback_context, "_invocation_context", None)
    run_config = getattr(context, "run_config", None)
    if run_config is None:
        return False
    mode = getattr(getattr(run_config, "streaming_mode", None), "value", None)
    return bool(getattr(run_config, "support_cfc", False)) or mode not in (None, "none", "")


def _model(callback_context: Any) -> Any:
    """The model of the agent whose call was refused (an LlmAgent's canonical_model)."""
    context = getattr(callback_context, "_invocation_context", None)
    agent = getattr(context, "agent", None)
    try:
        model = getattr(agent, "canonical_model", None)
    except Exception:  # an agent whose model cannot be resolved: leave the error as it is
        return None
    return model if hasattr(model, "generate_content_async") else None
