"""The ADK bridge paces a model's calls to the request quota the service stated in its 429
(evalcheck_adk_bridge/pacing.py): which quotas are rates, and the spacing of calls."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

import pytest

pytest.importorskip("google.adk")

from google.genai import errors  # noqa: E402

from evalcheck_adk_bridge.pacing import MARGIN, MAX_WAIT, CallPacer, stated_rate  # noqa: E402
from tests.fakes.gemini_api import FakeGeminiApi, Quota, Stats  # noqa: E402
from tests.refusals.service import BRIDGE, Outcome, run_evalcheck  # noqa: E402


def quota_error(*violations: dict[str, str], code: int = 429) -> errors.APIError:
    details = [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": list(violations)},
               {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "43s"}]
    return errors.ClientError(code, {"error": {"code": code, "status": "RESOURCE_EXHAUSTED",
                                               "message": "You exceeded your current quota.",
                                               "details": details}})


# Gemini's own violations (the free tier's per-minute quota; the fake's per-second one).
PER_MINUTE = {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
              "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "quotaValue": "10"}
PER_SECOND = {"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
              "quotaId": "GenerateRequestsPerSecondPerProjectPerModel", "quotaValue": "40"}
PER_DAY = {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
           "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "quotaValue": "250"}
TOKENS = {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
          "quotaId": "GenerateContentInputTokensPerModelPerMinute-FreeTier", "quotaValue": "250000"}
IN_FLIGHT = {"quotaMetric": "generativelanguage.googleapis.com/generate_content_concurrent_requests",
             "quotaId": "GenerateContentConcurrentRequestsPerProjectPerModel", "quotaValue": "32"}


def test_a_quota_of_requests_per_second_or_minute_is_a_rate() -> None:
    assert stated_rate(quota_error(PER_SECOND).details) == 40.0
    assert stated_rate(quota_error(PER_MINUTE).details) == pytest.approx(10 / 60)
    # Several exhausted at once: the lowest rate is what holds.
    assert stated_rate(quota_error(TOKENS, PER_SECOND, PER_MINUTE).details) == pytest.approx(10 / 60)


@pytest.mark.parametrize("violation", [PER_DAY, TOKENS, IN_FLIGHT,
                                       {**PER_SECOND, "quotaValue": "unlimited"},
                                       {**PER_SECOND, "quotaValue": "0"}])
def test_quotas_that_are_not_a_rate_of_calls_are_not_paced(violation: dict[str, str]) -> None:
    assert stated_rate(quota_error(violation).details) is None


def test_bodies_without_a_quota_failure_state_no_rate() -> None:
    for details in (None, "text", {}, {"error": {"details": "x"}}, {"error": {"details": [3, {}]}},
                    {"error": {"details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                                            "violations": ["x", {}]}]}}):
        assert stated_rate(details) is None


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))


def test_calls_of_a_paced_model_start_the_quotas_spacing_apart_in_the_order_asked() -> None:
    time = FakeTime()
    pacer = CallPacer(clock=time.clock, sleep=time.sleep)

    async def calls(model: str, n: int) -> None:
        for _ in range(n):
            await pacer.wait(model)

    asyncio.run(calls("gemini-2.5-flash", 3))
    assert time.slept == []  # nothing stated yet: not paced
    pacer.learn("gemini-2.5-flash", quota_error(PER_SECOND))
    pacer.learn("gemini-2.5-flash", errors.ClientError(429, {"error": {"code": 429}}))  # no quota: kept
    assert pacer.spacing("gemini-2.5-flash") == pytest.approx(MARGIN / 40)
    asyncio.run(calls("gemini-2.5-flash", 4))
    step = MARGIN / 40
    # Asked at the same moment: the first goes at once, each next one a step later.
    assert time.slept == [pytest.approx(step), pytest.approx(2 * step), pytest.approx(3 * step)]
    time.slept.clear()
    time.now += 10  # long after: the turn is now again
    asyncio.run(calls("gemini-2.5-flash", 1))
    asyncio.run(calls("gemini-2.0-flash", 5))  # another model's quota is its own
    assert time.slept == []
    # A lower rate stated later widens the spacing; a higher one never narrows it.
    pacer.learn("gemini-2.5-flash", quota_error(PER_MINUTE))
    pacer.learn("gemini-2.5-flash", quota_error(PER_SECOND))
    assert pacer.spacing("gemini-2.5-flash") == pytest.approx(MARGIN * 6)


def test_a_call_never_waits_longer_than_max_wait_for_its_turn() -> None:
    """At 10 calls a minute (6.18 s apart), 12 calls asked at once: those whose turn is
    within MAX_WAIT (60 s) wait for it; the others go at once, taking no turn, so the
    queue does not grow past the checker's turn timeout."""
    time = FakeTime()
    pacer = CallPacer(clock=time.clock, sleep=time.sleep)
    pacer.learn("gemini-2.5-flash", quota_error(PER_MINUTE))
    step = MARGIN * 6

    async def calls(n: int) -> None:
        for _ in range(n):
            await pacer.wait("gemini-2.5-flash")

    asyncio.run(calls(12))
    queued = int(MAX_WAIT // step)  # 9 turns after the first are within 60 s
    assert time.slept == [pytest.approx(i * step) for i in range(1, queued + 1)]
    assert max(time.slept) <= MAX_WAIT


# ------------------------------------------------- what the bridge tells the checker of a refusal

class FakeModel:
    """A model whose call, retried by the plugin, answers (``answers``) or is refused."""

    def __init__(self, *answers: Exception | str):
        self.answers = list(answers)

    async def generate_content_async(self, request: object, stream: bool = False):  # noqa: ANN201
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        yield answer


def told_refusals(pacer: CallPacer, error: Exception, *later: Exception | str) -> list[bool]:
    """One model call through the bridge's retry plugin, refused with ``error`` (its retries
    answered ``later``): the ``paced`` flag of each refusal told to the checker."""
    from types import SimpleNamespace

    from google.adk.models.llm_request import LlmRequest

    from evalcheck_adk_bridge.pacing import PACER
    from evalcheck_adk_bridge.retries import TELL, refusal_retries

    async def no_sleep(seconds: float) -> None:
        return None

    told: list[bool] = []
    plugin = refusal_retries(sleep=no_sleep)
    model = FakeModel(*later)
    context = SimpleNamespace(_invocation_context=SimpleNamespace(
        agent=SimpleNamespace(canonical_model=model), run_config=None))
    request = LlmRequest(model="gemini-2.5-flash")

    async def call() -> None:
        PACER.set(pacer)
        TELL.set(lambda refusal, paced: told.append(paced))
        await plugin.before_model_callback(callback_context=context, llm_request=request)
        await plugin.on_model_error_callback(callback_context=context, llm_request=request,
                                             error=error)

    asyncio.run(call())
    return told


def test_a_refusal_the_bridge_paces_for_is_told_paced() -> None:
    """The checker's limiter cuts the runs in flight for a refusal unless the bridge paces
    that model's calls from then on (``"paced": true``): a refusal stating a rate quota is
    (the call before it was not paced yet, and its retry waits its turn)."""
    time = FakeTime()
    pacer = CallPacer(clock=time.clock, sleep=time.sleep)
    assert told_refusals(pacer, quota_error(PER_SECOND), quota_error(PER_SECOND), "ok") == [True, True]
    # A refusal naming no rate (a storm's 503, a quota of tokens) is not paced: cut for.
    fresh = CallPacer(clock=time.clock, sleep=time.sleep)
    overloaded = errors.ServerError(503, {"error": {"code": 503, "status": "UNAVAILABLE"}})
    assert told_refusals(fresh, overloaded, "ok") == [False]
    assert told_refusals(fresh, quota_error(TOKENS), "ok") == [False]


def test_a_call_that_skipped_a_queue_too_long_is_told_unpaced() -> None:
    """At 10 calls a minute with ten calls queued, the next call skips the queue (MAX_WAIT):
    its refusal says that more runs are in flight than the quota serves, and is cut for."""
    time = FakeTime()
    pacer = CallPacer(clock=time.clock, sleep=time.sleep)
    pacer.learn("gemini-2.5-flash", quota_error(PER_MINUTE))

    async def queue(n: int) -> None:
        for _ in range(n):
            await pacer.wait("gemini-2.5-flash")

    asyncio.run(queue(int(MAX_WAIT // (MARGIN * 6)) + 1))
    assert told_refusals(pacer, quota_error(PER_MINUTE), "ok") == [False]


# ------------------------------------------------------------------ through the real bridge

def paced_run(tmp_path: Path, rate: float, cases: int) -> tuple[Outcome, Stats]:
    """tests/adk_agent/gemini_app through evalcheck-adk against a service allowing ``rate``
    calls a second (its 429s name the quota, as Gemini's do, and ask for 0.5 s)."""
    from tests.fakes.weather_service import APP, service_config, write_eval_set

    (tmp_path / ".git").mkdir()
    write_eval_set(tmp_path / "evals", cases)
    how = ["--agent-command", f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(APP))}"]
    quota = Quota(per_second=rate, retry_delay=0.5)
    with FakeGeminiApi(service_config(latency=0.05, quota=quota)) as api:
        outcome = run_evalcheck(tmp_path, api.url, *how, "--num-runs", "2")
        return outcome, api.stats()


def test_the_bridge_paces_the_calls_to_the_rate_the_service_stated(tmp_path: Path) -> None:
    """8 cases x 2 runs x 3 calls at 8 runs at once go over a quota of 6 calls a second at
    once. The first refusals name the quota; from then on the bridge spaces the model's calls
    1/6 s apart (and a little more), so the calls after the first refusals' retries are not
    refused: unpaced, each second over the quota is refused again (about 20 refusals)."""
    outcome, stats = paced_run(tmp_path, rate=6.0, cases=8)
    assert outcome.code == 0, outcome.output
    assert {c["status"] for c in outcome.cases()} == {"passed"}
    assert stats.served == 8 * 2 * 3
    first = stats.refused_at[0]
    # The calls in flight when the quota was first met, and their retries, may be refused;
    # after that nothing is.
    assert stats.refused >= 1 and all(at < first + 1.5 for at in stats.refused_at), stats.refused_at
    starts = sorted(start for start, _ in stats.served_at if start > first + 1.5)
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert gaps and min(gaps) >= 1 / 6 * 0.9, gaps  # spaced, not bursts
    assert outcome.results is not None
    assert outcome.results["metadata"]["modelService"]["refusals"] == stats.refused
    # Every refusal was told paced, so the runs in flight were never cut below the start.
    service = outcome.results["metadata"]["modelService"]
    assert service["pacedByAgents"] == service["retriedByAgents"] == stats.refused
    concurrency = outcome.results["metadata"]["adaptiveConcurrency"]
    assert concurrency["lowest"] == concurrency["start"], concurrency
