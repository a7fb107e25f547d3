"""Fixtures for the judge tests: a fake Gemini server and a judge service pointed at it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from checker.judges.client import RetryPolicy
from checker.judges.service import JudgeService
from checker.metrics import get_metric
from checker.metrics.base import RunInput, RunScore, ScoringContext, ScoringServices
from checker.models.evalset import EvalCase, Invocation

from .fake_gemini import FakeGemini

FAST_RETRY = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=5.0, jitter=0.0, timeout=5.0)


@pytest.fixture
def fake():
    with FakeGemini() as server:
        yield server


@pytest.fixture
def env(fake) -> dict[str, str]:
    return {"GOOGLE_API_KEY": "test-key", "EVALCHECK_GEMINI_BASE_URL": fake.url}


def service_for(env: dict[str, str], **kwargs: Any) -> JudgeService:
    kwargs.setdefault("retry", FAST_RETRY)
    return JudgeService(kwargs.pop("concurrency", 8), kwargs.pop("cache_dir", None), env=env, **kwargs)


def invocation(user: str, final: str | None = None, **extra: Any) -> Invocation:
    data: dict[str, Any] = {"user_content": {"role": "user", "parts": [{"text": user}]}}
    if final is not None:
        data["final_response"] = {"role": "model", "parts": [{"text": final}]}
    data.update(extra)
    return Invocation.model_validate(data)


def run_input(actual: list[Invocation], expected: list[Invocation] | None = None,
              rubrics: list[dict[str, Any]] | None = None) -> RunInput:
    case = EvalCase.model_validate({"eval_id": "case", "conversation": [
        i.model_dump(exclude_none=True) for i in (expected or actual)], "rubrics": rubrics})
    return RunInput(case=case, actual=actual, expected=case.conversation, scenario=None)


def score(metric_name: str, criterion: dict[str, Any], run: RunInput,
          service: JudgeService) -> RunScore:
    """Score one run with a registered metric, as checker.scoring.case does, then close the client."""
    metric = get_metric(metric_name)
    assert metric is not None
    parsed = metric.criterion_model.model_validate(criterion)

    async def go() -> RunScore:
        try:
            return await metric().score(parsed, run, ScoringContext(services=ScoringServices(judge=service)))
        finally:
            await service.aclose()

    return asyncio.run(go())
