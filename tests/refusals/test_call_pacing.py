"""The ADK bridge paces a model's calls to the request quota the service stated in its 429
(evalcheck_adk_bridge/pacing.py): which quotas are rates, and the spacing of calls."""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from time import monotonic
from time import sleep as hold

import pytest

pytest.importorskip("google.adk")

from google.genai import errors  # noqa: E402

from evalcheck_adk_bridge.pacing import MARGIN, MAX_WAIT, CallPacer, stated_quota, stated_rate  # noqa: E402
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
    # ... with the window it counts calls in
    assert stated_quota(quota_error(PER_SECOND).details) == (40.0, 1.0)
    assert stated_quota(quota_error(PER_SECOND, PER_MINUTE).details) == (10.0, 60.0)


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
        self.now += seconds


def released(pacer: CallPacer, model: str, n: int, *, hold_loop: float = 0.0,
             skipped: list[int] | None = None) -> list[tuple[int, float]]:
    """``n`` calls of ``model`` asking at once, on a real event loop: (which, when it went),
    in the order they went (those that skipped the queue added to ``skipped``).
    ``hold_loop``: the loop is held up that long (a collection, CPU work) right after the
    second call went, while the others wait."""
    went: list[tuple[int, float]] = []

    async def call(i: int) -> None:
        took_turn = await pacer.wait(model)
        went.append((i, monotonic()))
        if not took_turn and skipped is not None:
            skipped.append(i)
        elif len(went) == 2 and hold_loop:
            hold(hold_loop)  # the whole loop stops: no call can go meanwhile

    async def calls() -> None:
        await asyncio.gather(*(call(i) for i in range(n)))

    asyncio.run(calls())
    return went


def gaps(went: list[tuple[int, float]]) -> list[float]:
    return [b - a for (_, a), (_, b) in zip(went, went[1:], strict=False)]


def test_calls_of_a_paced_model_start_the_quotas_spacing_apart_in_the_order_asked() -> None:
    pacer = CallPacer()
    assert gaps(released(pacer, "gemini-2.5-flash", 3)) < [0.01] * 2  # not paced: at once
    pacer.learn("gemini-2.5-flash", quota_error({**PER_SECOND, "quotaValue": "20"}))
    pacer.learn("gemini-2.5-flash", errors.ClientError(429, {"error": {"code": 429}}))  # no quota: kept
    step = MARGIN / 20
    assert pacer.spacing("gemini-2.5-flash") == pytest.approx(step)
    assert step == pytest.approx(0.0515)  # 20 a second, spaced 3% wider: 51.5 ms, not 50
    went = released(pacer, "gemini-2.5-flash", 5)
    assert [i for i, _ in went] == [0, 1, 2, 3, 4]  # in the order asked
    # each a step after the one before (give or take the loop's wake-up), 4 steps in all
    assert all(step - 0.005 <= gap < step + 0.03 for gap in gaps(went)), gaps(went)
    assert went[-1][1] - went[0][1] >= 4 * step - 0.001
    assert gaps(released(pacer, "gemini-2.0-flash", 5)) < [0.01] * 4  # another model's own quota
    # A lower rate stated later widens the spacing; a higher one never narrows it.
    pacer.learn("gemini-2.5-flash", quota_error(PER_MINUTE))
    pacer.learn("gemini-2.5-flash", quota_error(PER_SECOND))
    assert pacer.spacing("gemini-2.5-flash") == pytest.approx(MARGIN * 6)


def test_calls_held_up_by_the_event_loop_go_on_spaced_not_all_at_once() -> None:
    """The loop held up for 0.3 s (six steps) while calls wait: the one whose turn came
    meanwhile goes when the loop is back, and each next one a step after it - not the six
    of them at once, which the service counts as one burst and refuses past its quota."""
    pacer = CallPacer()
    pacer.learn("gemini-2.5-flash", quota_error({**PER_SECOND, "quotaValue": "20"}))
    step = MARGIN / 20
    went = released(pacer, "gemini-2.5-flash", 8, hold_loop=0.3)
    assert [i for i, _ in went] == list(range(8))
    spaced = gaps(went)
    assert spaced[1] >= 0.3  # the hold-up
    assert all(gap >= step - 0.005 for gap in spaced), spaced


def test_after_a_hold_up_a_call_leaves_a_turn_after_the_one_sent_late_by_it() -> None:
    """The loop held up for 0.3 s right after a call got its turn, before its request left:
    that request leaves when the loop is back, and the call whose turn came meanwhile a step
    after it - not beside it, two calls at once, one more than the quota's window holds."""
    pacer = CallPacer()
    pacer.learn("gemini-2.5-flash", quota_error({**PER_SECOND, "quotaValue": "20"}))
    step = MARGIN / 20
    went = released(pacer, "gemini-2.5-flash", 5, hold_loop=0.3)
    sent_late = went[1][1] + 0.3  # the second call's request, held up with the loop
    assert went[2][1] - sent_late >= step - 0.005, gaps(went)
    assert all(gap >= step - 0.005 for gap in gaps(went)[2:]), gaps(went)
    then = released(pacer, "gemini-2.5-flash", 1)  # a call asking later takes the next turn
    assert then[0][1] - went[-1][1] >= step - 0.005


def test_a_call_never_waits_longer_than_max_wait_for_its_turn() -> None:
    """At 10 calls a second (0.103 s apart) with a longest wait of 0.35 s, 8 calls asked at
    once: the first four wait for their turns (the fourth's comes 0.31 s on); the others
    go at once, taking no turn, so the queue does not grow past the checker's turn timeout
    (MAX_WAIT: 60 s)."""
    pacer = CallPacer(max_wait=0.35)
    pacer.learn("gemini-2.5-flash", quota_error({**PER_SECOND, "quotaValue": "10"}))
    skipped: list[int] = []
    went = released(pacer, "gemini-2.5-flash", 8, skipped=skipped)
    assert skipped == [4, 5, 6, 7]
    began = went[0][1]
    assert [i for i, at in went if at - began < 0.05] == [0, 4, 5, 6, 7]  # at once
    assert [i for i, _ in went[-3:]] == [1, 2, 3]
    assert went[-1][1] - began == pytest.approx(3 * MARGIN / 10, abs=0.03)
    assert MAX_WAIT == 60.0


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


def went_at(pacer: CallPacer, time: FakeTime, n: int, model: str = "gemini-2.5-flash") -> list[float]:
    """``n`` calls of ``model``, each asking once the one before went: when each went."""
    went = []
    for _ in range(n):
        assert asyncio.run(pacer.wait(model))
        went.append(round(time.now, 4))
    return went


def test_once_paced_a_window_holds_no_more_calls_than_the_quota_counting_the_burst_before() -> None:
    """20 calls a second allowed. 20 calls went unpaced, 10 ms apart (100.00-100.19), the
    last of them refused: the quota is met. The service's window still holds the 19 calls it
    took, so one more may go at once (the refused one does not count); the next only once the
    first of the burst left the window, 1.03 s after it (the margin: calls arrive after their
    turn), not the spacing (51.5 ms) after the one before; then spaced again."""
    time = FakeTime()
    pacer = CallPacer(clock=time.clock, sleep=time.sleep)
    for _ in range(20):
        assert asyncio.run(pacer.wait("gemini-2.5-flash"))  # not paced yet: at once
        time.now = round(time.now + 0.01, 6)
    time.now = 100.2
    pacer.learn("gemini-2.5-flash", quota_error({**PER_SECOND, "quotaValue": "20"}))
    assert went_at(pacer, time, 4) == [100.2, 101.03, 101.0815, 101.133]
    assert went_at(pacer, time, 1, model="other-model") == [101.133]  # a model of its own


def test_a_call_that_skipped_the_queue_counts_in_the_window() -> None:
    """2 calls a second allowed, a longest wait of 0.3 s: of two calls asking at 100.0 the
    second skips the queue (its turn is 0.515 s on) and goes at once. A window then holds
    both: a call asking at 100.6, past the spacing, would wait until 101.03, so it skips too."""
    time = FakeTime()
    pacer = CallPacer(clock=time.clock, sleep=time.sleep, max_wait=0.3)
    pacer.learn("gemini-2.5-flash", quota_error({**PER_SECOND, "quotaValue": "2"}))
    assert asyncio.run(pacer.wait("gemini-2.5-flash"))
    assert not asyncio.run(pacer.wait("gemini-2.5-flash"))
    time.now = 100.6
    assert not asyncio.run(pacer.wait("gemini-2.5-flash"))


def test_the_calls_kept_are_bounded_and_one_that_skips_the_queue_still_counts() -> None:
    """SENT_MOST calls kept per model (a larger quota is paced by its spacing alone): a call
    that skips the queue once they are all kept makes room for itself."""
    from evalcheck_adk_bridge.pacing import SENT_MOST

    time = FakeTime()
    pacer = CallPacer(clock=time.clock, sleep=time.sleep, max_wait=0.0)

    async def unpaced(model: str) -> None:
        for _ in range(SENT_MOST + 5):
            assert await pacer.wait(model)
    asyncio.run(unpaced("gemini-2.5-flash"))
    pacer.learn("gemini-2.5-flash", quota_error({**PER_SECOND, "quotaValue": "5"}))
    for _ in range(2):  # (the refused call left the count: room for one)
        assert not asyncio.run(pacer.wait("gemini-2.5-flash"))  # the window is full: 1.03 s on
    # A quota larger than what is kept: its first paced call goes at once, by its spacing.
    asyncio.run(unpaced("big"))
    pacer.learn("big", quota_error({**PER_SECOND, "quotaValue": str(SENT_MOST + 2)}))
    assert asyncio.run(pacer.wait("big"))


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
    """At 10 calls a minute (6.18 s apart) with a longest wait of 5 s, the call after one
    that just went skips the queue (MAX_WAIT): its refusal says that more runs are in flight
    than the quota serves, and is cut for."""
    time = FakeTime()
    pacer = CallPacer(clock=time.clock, sleep=time.sleep, max_wait=5.0)
    pacer.learn("gemini-2.5-flash", quota_error(PER_MINUTE))
    asyncio.run(pacer.wait("gemini-2.5-flash"))  # goes: the next turn is 6.18 s on
    assert told_refusals(pacer, quota_error(PER_MINUTE), "ok") == [False]
    time.now += 6.2  # its turn has come: a refusal now is paced
    assert told_refusals(pacer, quota_error(PER_MINUTE), "ok") == [True]


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


def test_the_bridge_waiting_on_a_slow_model_grows_at_once_then_paces_to_its_quota(tmp_path: Path) -> None:
    """16 cases x 2 runs x 3 calls at 0.5 s a call, 20 calls a second allowed: the bridge's
    process mostly waits, so the concurrency jumps from its start before runs finish (not by
    ones); the quota's refusals are paced and cut nothing, and every case passes."""
    from tests.fakes.weather_service import APP, service_config, write_eval_set

    (tmp_path / ".git").mkdir()
    write_eval_set(tmp_path / "evals", 16)
    how = ["--agent-command", f"{shlex.quote(str(BRIDGE))} {shlex.quote(str(APP))}"]
    with FakeGeminiApi(service_config(latency=0.5, quota=Quota(per_second=20, retry_delay=0.5))) as api:
        outcome = run_evalcheck(tmp_path, api.url, *how, "--num-runs", "2")
        stats = api.stats()
    assert outcome.code == 0, outcome.output
    assert {c["status"] for c in outcome.cases()} == {"passed"}
    assert outcome.results is not None
    concurrency = outcome.results["metadata"]["adaptiveConcurrency"]
    limits = [concurrency["start"]] + [limit for _, limit in concurrency["overTime"]]
    assert any(after - before >= 4 for before, after in zip(limits, limits[1:], strict=False)), concurrency
    assert concurrency["lowest"] == concurrency["start"] == 8, concurrency
    service = outcome.results["metadata"]["modelService"]
    assert stats.refused >= 1 and service["pacedByAgents"] == service["retriedByAgents"] == stats.refused
