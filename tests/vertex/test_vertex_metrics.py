"""Vertex AI metrics through the real google-cloud-aiplatform client against a local fake."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import pytest
from fake_vertex import FakeVertex

from checker.inputs.criteria import build_config
from checker.errors import InputError
from checker.metrics import get_metric
from checker.metrics.machinery.vertex import RetryPolicy, retry_after_seconds
from checker.metrics.base import Criterion, RunInput, RunScore, ScoringContext, ScoringServices
from checker.models.evalset import EvalCase, Invocation
from checker.scoring.case import score_run

MULTI_TURN = ("multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1",
              "multi_turn_tool_use_quality_v1")
ALL = ("safety_v1", "response_evaluation_score", *MULTI_TURN)


def turn(query: str, answer: str, n: int = 1, tools: list[dict[str, Any]] | None = None,
         **extra: Any) -> Invocation:
    data: dict[str, Any] = {"invocation_id": f"inv-{n}",
                            "user_content": {"role": "user", "parts": [{"text": query}]},
                            "final_response": {"role": "model", "parts": [{"text": answer}]}}
    if tools is not None:
        data["intermediate_data"] = {"tool_uses": tools,
                                     "tool_responses": [{"name": t["name"], "response": {"ok": True}}
                                                        for t in tools]}
    data.update(extra)
    return Invocation.model_validate(data)


def run_of(*invocations: Invocation, expected: list[Invocation] | None = None) -> RunInput:
    case = EvalCase.model_validate({"eval_id": "c1", "conversation": [
        i.model_dump(exclude_none=True) for i in (expected or invocations)]})
    return RunInput(case=case, actual=list(invocations), expected=expected, scenario=None)


def spec_name(body: dict[str, Any]) -> str:
    [metric] = body["metrics"]
    return metric["predefined_metric_spec"]["metric_spec_name"]


class RecordedSleep:
    """Stands in for asyncio.sleep: records each backoff, waits for nothing."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def context(attempts: int = 4, **services: Any) -> tuple[ScoringContext, RecordedSleep]:
    sleep = RecordedSleep()
    policy = RetryPolicy(attempts=attempts, initial_delay=0.5, max_delay=4.0, sleep=sleep)
    return ScoringContext(services=ScoringServices(vertex_retry=policy, **services)), sleep


def score(name: str, run: RunInput, ctx: ScoringContext, threshold: float = 0.5) -> RunScore:
    """Through checker.scoring.case.score_run, as the pipeline calls a metric."""
    metric = get_metric(name)
    assert metric is not None, name
    configured = type("Configured", (), {"metric": metric, "criterion": Criterion(threshold=threshold),
                                         "name": name})()
    return asyncio.run(score_run(configured, run, ctx))


# ---------------------------------------------------------------- scores


def test_safety_scores_each_invocation_in_express_mode(express: FakeVertex) -> None:
    ctx, _ = context()
    result = score("safety_v1", run_of(turn("hi", "Hello!"), turn("how?", "UNSAFE advice", 2)), ctx)
    assert result.error is None
    assert result.score == 0.5
    assert [i.score for i in result.invocations] == [1.0, 0.0]
    assert result.invocations[1].details["explanation"] == "violates policy"
    assert result.details == {"backend": "vertex-ai-express-mode", "instances": 2, "requests": 2}
    assert len(express.requests) == 2
    # The two requests run concurrently: pick the first turn's by its prompt.
    [request] = [r for r in express.requests if "hi" in str(r.body["instance"]["prompt"])]
    assert request.path == "/v1beta1/:evaluateInstances"
    assert request.headers["x-goog-api-key"] == express.api_key
    assert spec_name(request.body) == "safety_v1"
    instance = request.body["instance"]
    assert instance["prompt"] == {"contents": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}}
    assert instance["response"]["contents"]["contents"][0]["parts"] == [{"text": "Hello!"}]
    assert "reference" not in instance


def test_project_and_location_win_over_an_api_key(project: FakeVertex,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "a-gemini-key")  # the agent's key; not for Vertex
    ctx, _ = context()
    result = score("safety_v1", run_of(turn("hi", "Hello!")), ctx)
    assert result.score == 1.0 and result.details["backend"] == "vertex-ai"
    request = project.requests[0]
    assert request.path == "/v1beta1/projects/my-project/locations/us-central1/:evaluateInstances"
    assert request.headers["authorization"] == f"Bearer {project.token}"
    assert "x-goog-api-key" not in request.headers


def test_coherence_is_reference_free_and_ranges_one_to_five(express: FakeVertex) -> None:
    ctx, _ = context()
    # No reference conversation at all (as in a scenario case): ADK would refuse.
    run = RunInput(case=EvalCase.model_validate({"eval_id": "s", "conversation_scenario": {
        "starting_prompt": "hi", "conversation_plan": "ask twice"}}),
        actual=[turn("hi", "A clear answer."), turn("more?", "rambling words", 2)],
        expected=None, scenario=None)
    result = score("response_evaluation_score", run, ctx, threshold=4)
    assert result.error is None
    assert [i.score for i in result.invocations] == [5.0, 2.0]
    assert result.score == 3.5
    spec = express.requests[0].body["metrics"][0]["llm_based_metric_spec"]
    assert "coherence" in spec["metric_prompt_template"].lower()
    assert all("reference" not in r.body["instance"] for r in express.requests)


def test_coherence_threshold_is_validated_against_one_to_five() -> None:
    config = build_config({"criteria": {"response_evaluation_score": 4.5}}, None, "test_config.json")
    assert config.metrics[0].threshold == 4.5
    with pytest.raises(InputError, match="out of range.*1 to 5"):
        build_config({"criteria": {"response_evaluation_score": 6}}, None, "test_config.json")
    with pytest.raises(InputError, match="out of range.*1 to 5"):
        build_config({"criteria": {"response_evaluation_score": 0.5}}, None, "test_config.json")
    with pytest.raises(InputError, match="out of range.*0 to 1"):
        build_config({"criteria": {"safety_v1": 2}}, None, "test_config.json")


@pytest.mark.parametrize("name", MULTI_TURN)
def test_multi_turn_scores_the_whole_conversation_in_one_request(express: FakeVertex, name: str) -> None:
    ctx, _ = context()
    weather = {"name": "get_weather", "args": {"city": "Paris"}}
    app = {"agent_details": {"weather_agent": {
        "name": "weather_agent", "instructions": "Answer weather questions.",
        "tool_declarations": [{"function_declarations": [{"name": "get_weather"}]}]}}}
    run = run_of(turn("Weather in Paris?", "Sunny.", 1, tools=[weather], app_details=app),
                 turn("And tomorrow?", "FAIL: no idea", 2))
    result = score(name, run, ctx)
    assert result.error is None
    assert len(express.requests) == 1
    request = express.requests[0].body
    assert spec_name(request) == name
    data = request["instance"]["agent_eval_data"]
    assert data["agents"]["weather_agent"]["instruction"] == "Answer weather questions."
    assert [t["turn_id"] for t in data["turns"]] == ["inv-1", "inv-2"]
    first = data["turns"][0]["events"]
    assert [e["author"] for e in first] == ["user", "weather_agent", "weather_agent", "weather_agent"]
    assert first[1]["content"]["parts"][0]["function_call"] == weather
    assert first[2]["content"]["parts"][0]["function_response"]["name"] == "get_weather"
    verdicts = result.details["rubricVerdicts"]
    assert verdicts[0] == {"rubric": "Turn 1 request was handled", "verdict": True, "reasoning": "met"}
    assert verdicts[1]["verdict"] is False  # omitted by the service when not met
    expected = 2 / 3 if name == "multi_turn_tool_use_quality_v1" else 0.5
    assert result.score == pytest.approx(expected)
    assert result.details["backend"] == "vertex-ai-express-mode"
    assert (result.details["instances"], result.details["requests"], result.details["turns"]) == (1, 1, 2)


def test_a_run_without_invocations_is_not_evaluated(express: FakeVertex) -> None:
    ctx, _ = context()
    for name in ALL:
        result = score(name, RunInput(case=run_of(turn("a", "b")).case, actual=[], expected=None,
                                      scenario=None), ctx)
        assert result.score is None and result.error is None and result.not_evaluated_reason
    assert express.requests == []


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("name", ALL)
def test_missing_credentials_say_what_to_set(clean_env: pytest.MonkeyPatch, fake: FakeVertex,
                                             name: str) -> None:
    ctx, _ = context()
    result = score(name, run_of(turn("hi", "Hello!")), ctx)
    assert result.score is None and result.error
    for variable in ("GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_API_KEY",
                     "application default credentials"):
        assert variable in result.error
    clean_env.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    result = score(name, run_of(turn("hi", "Hello!")), ctx)
    assert "need GOOGLE_CLOUD_LOCATION as well" in result.error
    assert fake.requests == []


def test_project_without_application_default_credentials(clean_env: pytest.MonkeyPatch,
                                                         fake: FakeVertex, tmp_path: Any) -> None:
    clean_env.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    clean_env.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    clean_env.setenv("GOOGLE_VERTEX_BASE_URL", fake.url)
    clean_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    ctx, _ = context()
    result = score("safety_v1", run_of(turn("hi", "Hello!")), ctx)
    assert "no application default credentials for project my-project" in result.error
    assert fake.requests == []


def test_refused_request_is_not_retried_and_explains_express_keys(express: FakeVertex) -> None:
    express.fail(403, message="Permission denied on resource")
    ctx, sleep = context()
    result = score("safety_v1", run_of(turn("hi", "Hello!")), ctx)
    assert result.error is not None
    assert "403 PERMISSION_DENIED: Permission denied on resource" in result.error
    assert "Gemini API (AI Studio) key is not accepted" in result.error
    assert express.api_key not in result.error
    assert len(express.requests) == 1 and sleep.delays == []


def test_wrong_key_is_refused(express: FakeVertex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "not-the-key")
    ctx, _ = context()
    result = score("multi_turn_task_success_v1", run_of(turn("hi", "Hello!")), ctx)
    assert "401 UNAUTHENTICATED" in result.error and "not-the-key" not in result.error


def test_rate_limit_honours_retry_after_then_succeeds(express: FakeVertex) -> None:
    express.fail(429, headers={"Retry-After": "7"})
    ctx, sleep = context()
    result = score("safety_v1", run_of(turn("hi", "Hello!")), ctx)
    assert result.error is None and result.score == 1.0
    assert sleep.delays == [7.0]
    assert len(express.requests) == 2


def test_server_errors_until_retries_run_out(express: FakeVertex) -> None:
    express.fail(500, times=3)
    ctx, sleep = context(attempts=3)
    result = score("multi_turn_trajectory_quality_v1", run_of(turn("hi", "Hello!")), ctx)
    assert result.score is None
    assert result.error == ("VertexError: Vertex AI did not answer after 3 attempts "
                            "(last: 500 INTERNAL: scripted failure)")
    assert len(express.requests) == 3
    # Exponential backoff with jitter: attempt k waits between half and all of 0.5 * 2**k.
    assert len(sleep.delays) == 2
    assert 0.25 <= sleep.delays[0] <= 0.5 and 0.5 <= sleep.delays[1] <= 1.0


def test_the_documented_retry_defaults() -> None:
    """docs/metrics.md: 6 attempts, 1 s doubling (a random wait between half and all of it),
    never more than 60 s, Retry-After honoured up to 120 s, 180 s per request."""
    policy = RetryPolicy()
    assert (policy.attempts, policy.initial_delay, policy.max_delay, policy.max_retry_after,
            policy.timeout) == (6, 1.0, 60.0, 120.0, 180.0)


def test_408_and_5xx_are_retried_with_the_default_backoff(express: FakeVertex) -> None:
    express.fail(408, times=3)
    express.fail(503, times=2)
    sleep = RecordedSleep()
    ctx = ScoringContext(services=ScoringServices(vertex_retry=RetryPolicy(sleep=sleep)))
    result = score("safety_v1", run_of(turn("hi", "Hello!")), ctx)
    assert result.error is None and result.score == 1.0
    assert len(express.requests) == 6  # the sixth and last attempt succeeds
    assert (result.details["instances"], result.details["requests"]) == (1, 6)
    assert len(sleep.delays) == 5
    for k, delay in enumerate(sleep.delays):
        assert 2 ** k / 2 <= delay <= 2 ** k


def test_the_default_gives_up_after_6_attempts(express: FakeVertex) -> None:
    express.fail(500, times=7)
    sleep = RecordedSleep()
    ctx = ScoringContext(services=ScoringServices(vertex_retry=RetryPolicy(sleep=sleep)))
    result = score("safety_v1", run_of(turn("hi", "Hello!")), ctx)
    assert "did not answer after 6 attempts" in result.error
    assert len(express.requests) == 6 and len(sleep.delays) == 5


def test_a_long_retry_after_is_cut_to_120_s(express: FakeVertex) -> None:
    express.fail(429, headers={"Retry-After": "3600"})
    sleep = RecordedSleep()
    ctx = ScoringContext(services=ScoringServices(vertex_retry=RetryPolicy(sleep=sleep)))
    result = score("safety_v1", run_of(turn("hi", "Hello!")), ctx)
    assert result.error is None and sleep.delays == [120.0]


def test_backoff_is_capped_and_retry_after_reads_dates() -> None:
    import random

    policy = RetryPolicy(initial_delay=1.0, max_delay=4.0)
    rng = random.Random(1)
    assert all(2.0 <= policy.backoff(10, rng) <= 4.0 for _ in range(20))
    assert retry_after_seconds({"retry-after": "Thu, 01 Jan 2099 00:00:10 GMT"},
                               now=4070908800.0) == 10.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_a_per_instance_error_in_a_200_answer_is_an_error(express: FakeVertex) -> None:
    ctx, _ = context()
    result = score("safety_v1", run_of(turn("hi", "Hello!"), turn("x", "JUDGE_ERROR", 2)), ctx)
    assert result.score is None
    assert "invocation 2: 3 the autorater output could not be parsed" in result.error


def test_bad_tool_declaration_is_a_clear_error(express: FakeVertex) -> None:
    app = {"agent_details": {"a": {"name": "a", "tool_declarations": [{"no_such_field": 1}]}}}
    ctx, _ = context()
    result = score("multi_turn_tool_use_quality_v1", run_of(turn("hi", "ok", app_details=app)), ctx)
    assert "the run cannot be sent to Vertex AI" in result.error
    assert express.requests == []


# ---------------------------------------------------------------- concurrency


def test_requests_share_the_judge_semaphore(express: FakeVertex) -> None:
    express.delay = 0.05  # lets requests overlap if the limit allowed it
    ctx, _ = context(judge_concurrency=2)
    run = run_of(*(turn(f"q{n}", f"a{n}", n) for n in range(1, 7)))

    async def both() -> list[RunScore]:
        metric_a, metric_b = get_metric("safety_v1")(), get_metric("response_evaluation_score")()
        return await asyncio.gather(metric_a.score(Criterion(threshold=0.5), run, ctx),
                                    metric_b.score(Criterion(threshold=3), run, ctx))

    safety, coherence = asyncio.run(both())
    assert safety.score == 1.0 and coherence.score == 5.0
    assert len(express.requests) == 12
    assert express.max_in_flight <= 2
    from checker.judges.slots import JudgeSlots

    assert isinstance(ctx.services.judge_semaphore, JudgeSlots)  # the judges' adaptive limit


def test_a_semaphore_set_by_another_judge_is_used(express: FakeVertex) -> None:
    ctx, _ = context()
    ctx.services.judge_semaphore = asyncio.Semaphore(1)
    express.delay = 0.02
    result = score("safety_v1", run_of(*(turn(f"q{n}", f"a{n}", n) for n in range(1, 5))), ctx)
    assert result.score == 1.0 and express.max_in_flight == 1


# ---------------------------------------------------------------- imports


def test_importing_the_registry_pulls_in_no_vertex_sdk() -> None:
    code = ("import sys, checker.metrics as m; m.registry(); "
            "heavy = [x for x in ('vertexai', 'agentplatform', 'pandas', 'litellm', "
            "'google.cloud.aiplatform') if x in sys.modules]; print(heavy); "
            "sys.exit(1 if heavy else 0)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_fake_parses_requests_with_aiplatforms_protos(express: FakeVertex) -> None:
    """A field the service's EvaluateInstancesRequest proto does not have is refused, so a
    test cannot pass on a request the real service would reject."""
    import httpx
    from fake_vertex import proto_problem

    assert proto_problem(b'{"metrics": [{"predefinedMetricSpec": {"metricSpecName": "safety_v1"}}]}') is None
    assert "no field named" in proto_problem(b'{"metrics": [], "instanse": {}}')
    answer = httpx.post(f"{express.url}v1beta1/:evaluateInstances",
                        headers={"x-goog-api-key": express.api_key},
                        json={"metrics": [{"predefined_metric_spec": {"metric_spec_nam": "safety_v1"}}]})
    assert answer.status_code == 400 and "not a valid EvaluateInstancesRequest" in answer.text


def test_a_spent_judge_budget_starts_no_vertex_request(express: FakeVertex) -> None:
    """--max-judge-tokens covers Vertex AI metrics too: once the budget is spent (by Gemini
    judges: Vertex answers tell no tokens), no evaluateInstances request starts and the
    metric is not evaluated on that run."""
    from checker.judges.service import JudgeService
    from checker.models.usage import TokenBudget
    from checker.scoring.case import metered_run

    judge = JudgeService()
    judge.budget = TokenBudget("--max-judge-tokens", 100, "judge")
    ctx, _ = context(judge=judge)
    metric = get_metric("safety_v1")
    configured = type("Configured", (), {"metric": metric, "criterion": Criterion(threshold=0.5),
                                         "name": "safety_v1"})()
    first, meter = asyncio.run(metered_run(configured, run_of(turn("hi", "Hello!")), ctx))
    assert first.score == 1.0 and meter.vertex_instances == 1 and len(express.requests) == 1
    judge.budget.charge(100)
    second, meter = asyncio.run(metered_run(configured, run_of(turn("hi", "Hello!")), ctx))
    assert second.not_evaluated_reason.startswith("the judge token budget (--max-judge-tokens 100)")
    assert meter.vertex_instances == 0 and len(express.requests) == 1 and judge.budget.refused == 1


def test_a_refused_request_keeps_its_judge_slot_through_its_backoff(express: FakeVertex) -> None:
    """One judge slot, two requests: the first is refused (429) and backs off holding the
    slot, so the second is not sent into the refusals meanwhile: the fake sees the first,
    the first again, then the second (limiter.HeldSlot)."""
    from checker.judges.slots import JudgeSlots

    class Waiting(RecordedSleep):
        async def __call__(self, seconds: float) -> None:
            self.delays.append(seconds)
            await asyncio.sleep(0.2)  # long enough for the other request to take a freed slot

    sleep = Waiting()
    policy = RetryPolicy(attempts=4, initial_delay=0.5, max_delay=4.0, sleep=sleep)
    slots = JudgeSlots(1)
    slots.limiter.fixed = True  # not cut by the refusal: the hold alone is tested
    ctx = ScoringContext(services=ScoringServices(vertex_retry=policy, judge_semaphore=slots))
    express.fail(429, headers={"Retry-After": "1"})
    result = score("safety_v1", run_of(turn("first question", "a1"), turn("second question", "a2", 2)),
                   ctx)
    assert result.error is None and sleep.delays == [1.0]
    sent = ["first" if "first question" in json.dumps(r.body) else "second"
            for r in express.requests]
    assert sent == ["first", "first", "second"], sent
    assert slots.limiter.in_flight == 0
