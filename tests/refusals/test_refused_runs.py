"""What a refused run is worth: the waits before it runs again (agents/service_wait.py), and a
run the model service kept refusing - never a failing run, no verdict on its case, exit 2
(scoring/case.py, compare/comparison.py, compare/gate.py, report/finish.py)."""

from __future__ import annotations

import asyncio
import random

import pytest

from checker.agents.service_wait import BASE_DELAY, MAX_DELAY, ServiceWaits
from checker.compare.comparison import compare
from checker.compare.gate import gate_failed, regression_cases
from checker.compare.headline import gate_headline
from checker.compare.pooling import run_passes
from checker.errors import InputError
from checker.inputs.criteria import build_config
from checker.metrics.base import ScoringContext
from checker.models.evalset import EvalCase
from checker.models.records import RecordedRun
from checker.models.refusal import ServiceRefusal
from checker.models.results import EvalSetResult, Results
from checker.report.finish import raise_refusal_errors
from checker.scoring.case import score_case
from checker.scoring.pipeline import summarize

QUOTA = ServiceRefusal(kind="rate_limited", code="429 RESOURCE_EXHAUSTED", retry_after=2.0,
                       message="quota")
OVERLOADED = ServiceRefusal(kind="unavailable", code="503 UNAVAILABLE", message="overloaded")


class Clock:
    """A clock that moves only when the waits sleep."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def waits(max_wait: float = 600.0, limiter: object = None) -> tuple[ServiceWaits, Clock]:
    clock = Clock()
    return ServiceWaits(max_wait, limiter=limiter, rng=random.Random(7), clock=clock,
                        sleep=clock.sleep), clock


# ------------------------------------------------------------------ the waits

def test_the_delay_the_service_asked_for_is_honoured_with_a_little_more() -> None:
    service, _ = waits()
    delays = [service.delay(QUOTA, attempt) for attempt in range(1, 200)]
    assert all(2.0 <= d <= 2.0 * 1.2 for d in delays)
    assert max(delays) - min(delays) > 0.2  # drawn per run: runs told 2 s do not all come back at once


def test_without_a_delay_the_backoff_is_exponential_and_jittered() -> None:
    service, _ = waits()
    for attempt in range(1, 12):
        cap = min(MAX_DELAY, BASE_DELAY * 2 ** (attempt - 1))
        drawn = [service.delay(OVERLOADED, attempt) for _ in range(50)]
        assert all(cap / 2 <= d <= cap for d in drawn)
        assert len(set(drawn)) > 1


def test_each_refusal_is_told_to_the_limiter_and_counted() -> None:
    told: list[float | None] = []

    class Limiter:
        def note_refusal(self, retry_after: float | None, paced: bool = False) -> None:
            told.append(retry_after)

        def history(self) -> list[int]:
            return [32, 16, 24]

    service, clock = waits(limiter=Limiter())

    async def go() -> list[bool]:
        return [await service.wait(QUOTA, 1), await service.wait(OVERLOADED, 2),
                await service.wait(QUOTA, 1)]

    assert asyncio.run(go()) == [True, True, True]
    assert told == [2.0, None, 2.0]
    assert service.refusals == 3 and service.refused_runs == 2
    assert service.waited == pytest.approx(sum(clock.slept))
    assert service.line() == ("model service: 3 refusals (429: 2, 503: 1), "
                              f"concurrency 32 -> 16 -> 24, waited {service.waited:.0f} s")
    assert service.metadata()["byCode"] == {"429 RESOURCE_EXHAUSTED": 2, "503 UNAVAILABLE": 1}


def test_a_refusal_the_agent_paces_for_is_told_so_to_the_limiter() -> None:
    from checker.limiter import AdaptiveLimiter

    limiter = AdaptiveLimiter(16, 32)
    service, _ = waits(limiter=limiter)
    service.told(QUOTA, paced=True)
    assert limiter.limit == 16 and limiter.refusals == 1
    service.told(QUOTA)
    assert limiter.limit == 12
    meta = service.metadata()
    assert (meta["retriedByAgents"], meta["pacedByAgents"], meta["refusals"]) == (2, 1, 2)


def test_waits_at_once_count_once() -> None:
    """The time waited is the run's: runs waiting together wait the same seconds."""
    service = ServiceWaits(600.0, rng=random.Random(1))

    async def go() -> None:
        await asyncio.gather(*(service.wait(ServiceRefusal(kind="rate_limited", code="429",
                                                           retry_after=0.1), 1)
                               for _ in range(20)))

    asyncio.run(go())
    assert 0.1 <= service.waited < 0.5


def test_an_outage_longer_than_the_bound_is_given_up_and_a_run_that_got_through_ends_it() -> None:
    service, clock = waits(max_wait=10.0)

    async def refused_until_given_up() -> int:
        attempt = 0
        while await service.wait(OVERLOADED, attempt + 1):
            attempt += 1
        return attempt

    tried = asyncio.run(refused_until_given_up())
    assert service.given_up == OVERLOADED
    assert clock.now <= 10.0 and tried >= 3  # waited, within the bound, then stopped
    assert "for longer than 10 s (--max-service-wait)" in service.gave_up_reason()
    # a run that got through ends an outage: the next refusal starts a new one
    fresh, clock = waits(max_wait=10.0)
    asyncio.run(fresh.wait(OVERLOADED, 1))
    clock.now += 9.5
    fresh.answered()
    assert asyncio.run(fresh.wait(OVERLOADED, 1)) is True


def test_no_wait_at_all_gives_up_at_once() -> None:
    service, clock = waits(max_wait=0.0)
    assert asyncio.run(service.wait(QUOTA, 1)) is False and clock.slept == []


# ------------------------------------------------------------------ what a refused run is worth

CASE = EvalCase.model_validate({
    "eval_id": "paris",
    "conversation": [{"invocation_id": "inv-1",
                      "user_content": {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
                      "final_response": {"role": "model", "parts": [{"text": "It is sunny in Paris."}]}}]})
CONFIG = build_config({"criteria": {"response_match_score": 0.8}}, None, None)


def answered(run: int, text: str = "It is sunny in Paris.", refusals: int | None = None) -> RecordedRun:
    return RecordedRun.model_validate({
        "evalSetId": "desk", "evalId": "paris", "run": run, "refusals": refusals,
        "invocations": [{"invocationId": "inv-1",
                         "userContent": {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
                         "finalResponse": {"role": "model", "parts": [{"text": text}]}}]})


def refused(run: int) -> RecordedRun:
    return RecordedRun(eval_set_id="desk", eval_id="paris", run=run, unavailable=OVERLOADED,
                       refusals=3, error="the model service refused turn 1 (503 UNAVAILABLE)")


def results_of(*runs: RecordedRun) -> Results:
    case = asyncio.run(score_case(CASE, CONFIG, list(runs), 1, ScoringContext()))
    sets = [EvalSetResult(eval_set_id="desk", path="desk.evalset.json", cases=[case])]
    summary = summarize(sets)
    return Results(passed=summary.passed == summary.cases, summary=summary, eval_sets=sets)


def test_a_run_refused_then_answered_counts_as_it_answered() -> None:
    case = results_of(answered(1, refusals=2), answered(2), answered(3)).eval_sets[0].cases[0]
    assert case.status == "passed"
    assert [r.status for r in case.runs] == ["passed"] * 3
    assert case.runs[0].refusals == 2 and case.runs[0].unavailable is None


def test_a_run_the_service_kept_refusing_is_no_failing_run_and_its_case_has_no_verdict() -> None:
    results = results_of(answered(1), refused(2), answered(3, text="Rain in Lyon."))
    case = results.eval_sets[0].cases[0]
    run = case.runs[1]
    assert (run.status, run.unavailable, run.refusals) == ("not_evaluated", OVERLOADED, 3)
    assert case.status == "not_evaluated"  # not "failed" on the two runs left, not "error"
    metric = next(m for m in case.metrics if m.name == "response_match_score")
    assert metric.runs[1] is None
    assert run_passes(case, metric) == [True, False]  # the refused run is left out, not failing
    assert not case.flaky or metric.runs.count(None) == 1


def test_the_agents_own_error_beside_a_refusal_still_errors_the_case() -> None:
    crashed = RecordedRun(eval_set_id="desk", eval_id="paris", run=3, error="the agent exited with status 1")
    assert results_of(answered(1), refused(2), crashed).eval_sets[0].cases[0].status == "error"


def test_refused_runs_never_regress_a_case_main_passed_and_the_gate_exits_2_naming_them() -> None:
    main = results_of(answered(1), answered(2), answered(3))
    head = results_of(refused(1), refused(2), answered(3, text="Rain in Lyon."))
    compared = compare(main, head)
    case = compared.eval_sets[0].cases[0]
    assert case.change == "unchanged" and case.status == "not_evaluated"
    assert regression_cases(compared) == []
    assert all(m.p_value is None for m in case.metrics)  # not tested on what is left
    for rule in ("regression", "failure", "drop", "error"):
        assert gate_failed(compared, rule)  # no verdict is never a pass
    assert not gate_failed(compared, "never")
    assert compared.comparison.metrics == []  # nor a suite drop from what is left
    passed, headline = gate_headline(compared, "regression")
    assert not passed and "regressed" not in headline and "dropped" not in headline
    assert ("the model service refused 2 of 3 runs (503 UNAVAILABLE) past --max-service-wait; "
            "no verdict on 1 case") in headline
    with pytest.raises(InputError, match=r"refused 2 of 3 runs \(503 UNAVAILABLE\)"):
        raise_refusal_errors(compared)


def test_a_refused_run_with_every_other_run_errored_is_not_every_run_errored() -> None:
    """An agent that failed its runs where main passed is regressed; a refusal among them
    is no failure of the agent, so the case has no verdict instead."""
    main = results_of(answered(1), answered(2))
    crashed = RecordedRun(eval_set_id="desk", eval_id="paris", run=2, error="the agent exited with status 1")
    compared = compare(main, results_of(refused(1), crashed))
    assert compared.eval_sets[0].cases[0].change != "regressed"


def test_runs_that_got_through_after_refusals_compare_as_any_run() -> None:
    main = results_of(answered(1), answered(2), answered(3))
    head = results_of(answered(1, refusals=4), answered(2, refusals=1), answered(3))
    compared = compare(main, head)
    case = compared.eval_sets[0].cases[0]
    assert (case.change, case.status) == ("unchanged", "passed")
    assert not gate_failed(compared, "regression")
    raise_refusal_errors(compared)  # nothing left unresolved: no exit 2
