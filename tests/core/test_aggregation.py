"""Aggregation over runs and metrics (CONTRACT section 4), through checker.scoring.case directly.

Test metrics are small Metric subclasses defined here and handed to the scorer in a
ConfiguredMetric; they are not added to checker/metrics, so the registry never sees them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from google.adk.evaluation.eval_case import Invocation as AdkInvocation
from google.adk.evaluation.eval_metrics import EvalMetric
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator

from checker.inputs.criteria import ConfiguredMetric, EvalConfig, build_config
from checker.metrics.base import InvocationScore, Metric, RunInput, RunScore, ScoringContext
from checker.models.evalset import EvalCase
from checker.models.records import RecordedRun
from checker.models.results import EvalSetResult
from checker.scoring.pipeline import summarize
from checker.scoring.case import aggregate_metric, case_status, score_case
from corehelpers import call, case, evalset, invocation, replay, run_cli, write_json


def config(criteria: dict[str, Any], *extra: ConfiguredMetric) -> EvalConfig:
    base = build_config({"criteria": criteria}, None, None)
    return EvalConfig(None, None, base.metrics + extra)


def runs_of(*invocation_lists: list[dict] | str) -> list[RecordedRun]:
    """Recorded runs 1..n; a string is an errored run with that error."""
    out = []
    for n, invs in enumerate(invocation_lists, start=1):
        if isinstance(invs, str):
            out.append(RecordedRun(eval_set_id="s", eval_id="c", run=n, error=invs))
        else:
            out.append(RecordedRun.model_validate({"evalSetId": "s", "evalId": "c", "run": n,
                                                   "invocations": invs}))
    return out


def score(eval_case: dict[str, Any], cfg: EvalConfig, runs: list[RecordedRun]):
    return asyncio.run(score_case(EvalCase.model_validate(eval_case), cfg, runs, 7, ScoringContext()))


def metric(result, name: str):
    (found,) = [m for m in result.metrics if m.name == name]
    return found


EXPECTED = case("c", invocation("Weather in Paris?", "Sunny in Paris, 21 C.", [call("get_weather", city="Paris")]))
RIGHT = invocation("Weather in Paris?", "Sunny in Paris, 21 C.", [call("get_weather", city="Paris")])
WRONG = invocation("Weather in Paris?", "Rain in Lyon.", [call("get_weather", city="Lyon")])


# ------------------------------------------------------------------ runs -> metric score


@pytest.mark.parametrize("threshold,status", [(1.0, "failed"), (0.6, "passed"), (2 / 3, "passed")])
def test_per_run_scores_are_kept_and_averaged(threshold, status):
    result = score(EXPECTED, config({"tool_trajectory_avg_score": threshold}),
                   runs_of([RIGHT], [WRONG], [RIGHT]))
    trajectory = metric(result, "tool_trajectory_avg_score")
    assert trajectory.runs == [1.0, 0.0, 1.0]
    assert trajectory.score == 2 / 3
    assert trajectory.min_max == (0.0, 1.0)
    assert trajectory.status == status and result.status == status
    assert [r.status for r in result.runs] == ["passed", "failed", "passed"]
    assert trajectory.details["worstRun"] == 2
    assert result.line == 7


def test_metric_score_is_the_mean_of_adk_run_scores():
    """Multi-turn, three runs: each run's score is ADK's case score, the metric their mean."""
    expected = case("c", invocation("q1", "The cats are running home"), invocation("q2", "東京は晴れ"))
    answers = [("the cat runs home", "東京の天気は晴れ"), ("", "晴れ"), ("cats running", "雨")]
    runs = runs_of(*[[invocation("q1", a), invocation("q2", b)] for a, b in answers])
    result = score(expected, config({"response_match_score": 0.5}), runs)
    adk = RougeEvaluator(EvalMetric(metric_name="response_match_score", threshold=0.5))
    adk_runs = []
    for run in runs:
        actual = [AdkInvocation.model_validate_json(i.model_dump_json(by_alias=True)) for i in run.invocations]
        ref = [AdkInvocation.model_validate_json(json.dumps(i)) for i in expected["conversation"]]
        adk_runs.append(adk.evaluate_invocations(actual, ref).overall_score)
    rouge = metric(result, "response_match_score")
    assert rouge.runs == adk_runs
    assert rouge.score == sum(adk_runs) / 3
    assert rouge.status == ("passed" if rouge.score >= 0.5 else "failed")


# ------------------------------------------------------------------ errored runs


def test_an_errored_run_makes_the_case_error():
    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0}),
                   runs_of("agent exited with status 1", [RIGHT]))
    trajectory = metric(result, "tool_trajectory_avg_score")
    assert (trajectory.runs, trajectory.score, trajectory.status) == ([None, 1.0], 1.0, "passed")
    assert [(r.run, r.status, r.error) for r in result.runs] == [
        (1, "error", "agent exited with status 1"), (2, "passed", None)]
    assert result.status == "error"
    assert metric(result, "tool_call_count_v1").runs == [None, 1.0]


def test_every_run_errored():
    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0}), runs_of("boom", "boom"))
    trajectory = metric(result, "tool_trajectory_avg_score")
    assert (trajectory.score, trajectory.status, trajectory.runs) == (None, "not_evaluated", [None, None])
    assert trajectory.error == "no run of the agent succeeded"
    assert result.status == "error"


def test_a_failed_gate_outranks_an_errored_run():
    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0}), runs_of("boom", [WRONG]))
    assert result.status == "failed"


def test_wrong_number_of_invocations_is_a_metric_error():
    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0, "response_match_score": 0.1}),
                   runs_of([RIGHT, RIGHT]))
    for name in ("tool_trajectory_avg_score", "response_match_score"):
        m = metric(result, name)
        assert m.status == "error" and "2 invocation(s) but the case has 1 turn(s)" in m.error
    assert result.status == "error"


# ------------------------------------------------------------------ metrics that break


class Raising(Metric):
    name = "test_raising"

    def score(self, criterion: Any, run: RunInput, context: ScoringContext) -> RunScore:
        if run.run == 2:
            raise RuntimeError("judge unavailable")
        return RunScore(score=1.0)


class WrongType(Metric):
    name = "test_wrong_type"

    def score(self, criterion: Any, run: RunInput, context: ScoringContext) -> Any:
        return 1.0


class AsyncHalf(Metric):
    name = "test_async"

    async def score(self, criterion: Any, run: RunInput, context: ScoringContext) -> RunScore:
        await asyncio.sleep(0)
        return RunScore(score=0.5)


class NaNScore(Metric):
    name = "test_nan"

    def score(self, criterion: Any, run: RunInput, context: ScoringContext) -> RunScore:
        return RunScore(score=float("nan"))


def configured(cls: type[Metric], threshold: float | None = 0.5, informational: bool = False) -> ConfiguredMetric:
    return ConfiguredMetric(cls.name, cls, None, threshold, informational)


def test_a_raising_metric_is_an_error_that_fails_the_case():
    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0}, configured(Raising)),
                   runs_of([RIGHT], [RIGHT]))
    raising = metric(result, "test_raising")
    assert raising.status == "error"
    assert raising.error == "run 2: RuntimeError: judge unavailable"
    assert raising.runs == [1.0, None]
    assert metric(result, "tool_trajectory_avg_score").status == "passed"
    # The agent ran fine both times: the broken metric is the metric's error and the case's,
    # never the run's (reports would otherwise say the agent failed).
    assert [(r.status, r.error) for r in result.runs] == [("passed", None), ("passed", None)]
    assert result.status == "error"
    results = [EvalSetResult(eval_set_id="s", path="s.evalset.json", cases=[result])]
    assert summarize(results).errored == 1 and summarize(results).passed == 0


class JudgeDown(Metric):
    """A judge metric whose judge answers run 1 but not run 2, keeping what it did get."""

    name = "test_judge_down"

    def score(self, criterion: Any, run: RunInput, context: ScoringContext) -> RunScore:
        if run.run == 2:
            return RunScore(error="judge failed: invocation 1: undecided",
                            invocations=[InvocationScore(details={"verdict": None, "failedSamples": [
                                {"error": "HTTP 503"}]})], details={"judgeModel": "gemini-x"})
        return RunScore(score=0.0, invocations=[InvocationScore(score=0.0, details={"verdict": "invalid"})],
                        details={"judgeModel": "gemini-x"})


def test_a_metric_error_is_judged_on_the_other_metrics_of_the_run():
    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0}, configured(JudgeDown, 0.5)),
                   runs_of([RIGHT], [WRONG]))
    # run 1: the judge said 0.0 < 0.5, so the run failed; run 2: the judge is down, and the
    # trajectory (0.0) alone decides it
    assert [r.status for r in result.runs] == ["failed", "failed"]
    judge = metric(result, "test_judge_down")
    assert (judge.status, judge.runs) == ("error", [0.0, None])
    # the report shows the errored run: what the judge could not answer is there
    assert judge.details["worstRun"] == 2
    assert judge.details["invocations"] == [{"score": None, "verdict": None,
                                             "failedSamples": [{"error": "HTTP 503"}]}]
    assert result.status == "failed"  # a failed gate outranks an error, as for errored runs


def test_a_run_whose_only_gate_errored_is_not_evaluated_not_errored():
    result = score(EXPECTED, EvalConfig(None, None, (configured(JudgeDown, 0.5),)), runs_of([RIGHT], [RIGHT]))
    assert [r.status for r in result.runs] == ["failed", "not_evaluated"]
    assert metric(result, "test_judge_down").status == "error" and result.status == "error"


def test_reports_call_a_metric_error_a_metric_error_not_an_agent_failure(tmp_path):
    from checker.models.results import Results, Summary
    from checker.report.junit import render_junit
    from checker.report.markdown import render_markdown
    from checker.report.terminal import failure_lines

    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0}, configured(Raising)),
                   runs_of([RIGHT], [RIGHT]))
    sets = [EvalSetResult(eval_set_id="s", path="s.evalset.json", cases=[result])]
    results = Results(passed=False, summary=summarize(sets), eval_sets=sets)
    assert isinstance(results.summary, Summary)
    lines = failure_lines(results)
    assert lines == ["s.evalset.json:7 c: test_raising could not be computed (metric error): "
                     "run 2: RuntimeError: judge unavailable"]
    markdown = render_markdown(results)
    assert "errored" not in markdown.split("### Why")[1]  # no "Run 2 errored", no "1 of 2 runs errored"
    assert "**test\\_raising** could not be computed (metric error)" in markdown
    assert "<sub>metric error</sub>" in markdown
    junit = render_junit(results)
    assert 'message="metric error: test_raising"' in junit
    assert "test_raising error: run 2: RuntimeError: judge unavailable" in junit
    assert "agent run" not in junit


def test_a_metric_returning_the_wrong_type_is_an_error():
    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0}, configured(WrongType)), runs_of([RIGHT]))
    assert metric(result, "test_wrong_type").status == "error"
    assert "not a RunScore" in metric(result, "test_wrong_type").error
    assert result.status == "error"


def test_an_async_metric_is_awaited():
    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0}, configured(AsyncHalf, 0.5)),
                   runs_of([RIGHT], [RIGHT]))
    assert (metric(result, "test_async").score, metric(result, "test_async").status) == (0.5, "passed")
    assert result.status == "passed"


def test_a_nan_score_is_not_evaluated():
    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0}, configured(NaNScore)), runs_of([RIGHT]))
    assert metric(result, "test_nan").status == "not_evaluated"
    # A gating metric with no score fails its case even when another gate passed, as
    # google-adk's AgentEvaluator reports it ("was not evaluated"; test_adk_aggregation.py).
    assert result.status == "failed"


# ------------------------------------------------------------------ informational metrics


def test_informational_metrics_never_gate():
    busy = invocation("Weather in Paris?", "Sunny in Paris, 21 C.", [call("get_weather", city="Paris")])
    busy["intermediate_data"] = {"invocation_events": [
        {"author": "a", "usage_metadata": {"prompt_token_count": 10**7}, "content": {"parts": [
            {"function_call": {"name": "get_weather", "args": {"city": "Paris"}}}]}}]}
    busy["duration"] = 3600.0
    result = score(EXPECTED, config({"tool_trajectory_avg_score": 1.0}, configured(Raising, None, True)),
                   runs_of([busy], [busy]))
    assert result.status == "passed"
    for name in ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1",
                 "invocation_duration_v1", "test_raising"):
        m = metric(result, name)
        assert m.status == "informational" and m.threshold is None
    assert metric(result, "token_usage_v1").score == 10**7
    assert metric(result, "invocation_duration_v1").score == 3600.0


def test_only_informational_metrics_is_not_evaluated():
    cfg = EvalConfig(None, None, tuple(m for m in config({"response_match_score": 0.1}).metrics
                                       if m.informational))
    result = score(EXPECTED, cfg, runs_of([RIGHT]))
    assert result.status == "not_evaluated"


def test_case_status_rules():
    m = lambda status: aggregate_metric(  # noqa: E731
        ConfiguredMetric("x", None, None, 0.5, status == "informational"),
        [(1, RunScore(score={"passed": 1.0, "failed": 0.0, "informational": 9.0}.get(status),
                      error="e" if status == "error" else None))])
    assert [m(s).status for s in ("passed", "failed", "error", "informational")] == [
        "passed", "failed", "error", "informational"]
    assert case_status([], [m("passed"), m("informational")]) == "passed"
    assert case_status([], [m("passed"), m("failed"), m("error")]) == "failed"
    assert case_status([], [m("passed"), m("error")]) == "error"
    assert case_status([], [m("informational")]) == "not_evaluated"
    assert case_status([], []) == "not_evaluated"


# ------------------------------------------------------------------ the gate, end to end


def test_a_not_evaluated_case_fails_the_gate(repo):
    scenario = {"eval_id": "sim", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "chat"}}
    write_json(repo / "e/s.evalset.json", evalset("s", case("ok"), scenario))
    write_json(repo / "runs.json", replay(("s", "ok", 1, [invocation()]), ("s", "sim", 1, [invocation()])))
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 1, out.output
    res = json.loads((repo / "r.json").read_text())
    # The reference metrics cannot score a scenario case: not evaluated, which fails the case
    # as in google-adk's AgentEvaluator (test_adk_aggregation.py, end to end).
    assert [c["status"] for c in res["evalSets"][0]["cases"]] == ["passed", "failed"]
    sim = res["evalSets"][0]["cases"][1]
    assert {m["name"]: m["status"] for m in sim["metrics"]}["tool_trajectory_avg_score"] == "not_evaluated"
    assert res["passed"] is False and res["summary"]["failed"] == 1
    assert "tool_trajectory_avg_score was not evaluated: the case has no reference conversation" \
        in out.output


def test_an_unscored_gating_metric_fails_the_error_gate(repo):
    """``--fail-on error`` (a run or metric errored, or a gating metric could not be scored)
    fails on a case whose reference metrics cannot score its scenario, though that case is
    ``failed``, not ``not_evaluated``."""
    scenario = {"eval_id": "sim", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "chat"}}
    write_json(repo / "e/s.evalset.json", evalset("s", case("ok"), scenario))
    write_json(repo / "runs.json", replay(("s", "ok", 1, [invocation()]), ("s", "sim", 1, [invocation()])))
    out = run_cli(["run", "e", "--replay", "runs.json", "--fail-on", "error"], repo)
    assert out.code == 1 and "gate failed (fail-on: error): 2 metrics not evaluated" in out.output, \
        out.output


def test_an_errored_run_fails_the_gate(repo):
    write_json(repo / "e/s.evalset.json", evalset("s", case("c1")))
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation()]),
                                          {"evalSetId": "s", "evalId": "c1", "run": 2, "error": "timeout"}))
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 1
    res = json.loads((repo / "r.json").read_text())
    assert res["summary"]["errored"] == 1 and res["passed"] is False
    assert res["evalSets"][0]["cases"][0]["runs"][1] == {
        "run": 2, "status": "error", "error": "timeout", "durationSeconds": None, "stderrTail": None}


def test_trajectory_details_explain_only_mismatches():
    expected = case("c", invocation("q1", "a", [call("f", x=1), call("g")]), invocation("q2", "b", [call("h")]))
    actual = [invocation("q1", "a", [call("f", x=1), call("g")]), invocation("q2", "b", [call("h", y=2)])]
    result = score(expected, config({"tool_trajectory_avg_score": 1.0}), runs_of(actual))
    trajectory = metric(result, "tool_trajectory_avg_score")
    assert trajectory.score == 0.5
    assert trajectory.details["invocations"] == [
        {"score": 1.0, "expectedCount": 2, "actualCount": 2, "firstDivergence": None},
        {"score": 0.0, "expectedCount": 1, "actualCount": 1, "firstDivergence": 0, "listedFrom": 0,
         "expected": [{"name": "h", "args": {}}], "actual": [{"name": "h", "args": {"y": 2}}]},
    ]
    assert (trajectory.details["matchType"], trajectory.details["ignoreArgs"]) == ("EXACT", False)


def test_long_trajectories_list_the_calls_around_the_first_divergence():
    """A 300-call turn lists 25 calls from just before the divergence, not all 600; the report
    numbers them by their real positions and marks the divergent one."""
    from checker.models.results import Results
    from checker.report.markdown import render_markdown

    want = [call("step", n=k) for k in range(300)]
    got = [call("step", n=k) for k in range(300)]
    got[200] = call("step", n=-1)
    result = score(case("c", invocation("q", "a", want)), config({"tool_trajectory_avg_score": 1.0}),
                   runs_of([invocation("q", "a", got)]))
    (inv,) = metric(result, "tool_trajectory_avg_score").details["invocations"]
    assert (inv["firstDivergence"], inv["listedFrom"], inv["expectedCount"]) == (200, 198, 300)
    assert [c["args"]["n"] for c in inv["expected"]] == list(range(198, 223))
    assert [c["args"]["n"] for c in inv["actual"]][2] == -1
    results = Results.model_validate({"passed": False, "summary": {"cases": 1, "failed": 1},
                                      "evalSets": [{"evalSetId": "s", "path": "s.evalset.json",
                                                    "cases": [result.model_dump(by_alias=True)]}]})
    report = render_markdown(results)
    assert "first divergence at call 201" in report
    assert "| **➜ 201** | `step(n=200)` | `step(n=-1)` |" in report
    assert "| 199 | `step(n=198)` | `step(n=198)` |" in report and "| 198 |" not in report
    assert "275 more calls not shown" in report

    # Near the end the window still holds 25 calls.
    got = [call("step", n=k) for k in range(299)]
    result = score(case("c", invocation("q", "a", want)), config({"tool_trajectory_avg_score": 1.0}),
                   runs_of([invocation("q", "a", got)]))
    (inv,) = metric(result, "tool_trajectory_avg_score").details["invocations"]
    assert (inv["firstDivergence"], inv["listedFrom"], len(inv["expected"]), len(inv["actual"])) == \
        (299, 275, 25, 24)
