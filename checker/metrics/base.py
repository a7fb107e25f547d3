"""What every metric is: a criterion model, and a pure function from one run to a score."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from ..models.evalset import ConversationScenario, EvalCase, FunctionCall, Invocation, tool_calls

if TYPE_CHECKING:
    from ..judges.limits import JudgeLimits
    from ..judges.service import JudgeService


class Criterion(BaseModel):
    """A criterion from test_config.json. Subclasses add the metric's own settings.

    Unknown keys are allowed, as in ADK's BaseCriterion (which keeps them unread): the
    reader warns about each and drops it (checker/inputs/ignored.py)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    threshold: float
    include_intermediate_responses_in_final: bool = False


class JudgeModelOptions(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    judge_model: str = "gemini-2.5-flash"
    judge_model_config: dict[str, Any] | None = None
    num_samples: int = Field(default=5, ge=1)
    parallelism_limit: int = Field(default=1, ge=1)


class JudgeCriterion(Criterion):
    judge_model_options: JudgeModelOptions = Field(default_factory=JudgeModelOptions)


class InformationalCriterion(BaseModel):
    """Efficiency metrics take no settings and no threshold."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class RunInput:
    """One run of one eval case: what the agent did, and what was expected."""

    case: EvalCase
    actual: list[Invocation]
    expected: list[Invocation] | None
    scenario: ConversationScenario | None
    run: int = 1


class InvocationScore(BaseModel):
    score: float | None = None
    # The turn's status as its evaluator set it ("passed", "failed", "not_evaluated",
    # "informational"): a custom metric's own. None: by the threshold, as every built-in
    # metric (scoring/aggregation.py infers a metric's direction from these).
    status: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    # More details, computed only if this run is the one reported (the worst): explaining a
    # mismatch can cost more than finding it, and most runs' explanations are never shown.
    explain: Callable[[], dict[str, Any]] | None = Field(default=None, exclude=True, repr=False)

    def all_details(self) -> dict[str, Any]:
        return {**self.details, **self.explain()} if self.explain else self.details


class RunScore(BaseModel):
    """A metric's verdict on one run. ``score`` None with no error means not evaluated."""

    score: float | None = None
    invocations: list[InvocationScore] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    not_evaluated_reason: str | None = None

    @field_validator("score")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and value != value:  # NaN is not a score
            return None
        return value


@dataclass
class ScoringServices:
    """What the run's judge-backed and custom metrics share, set up once a run
    (scoring/services.py) or on first use. Each is None until then."""

    judge: JudgeService | None = None
    # The judge service's options, for one made on first use (judges/service.py).
    judge_concurrency: int = 8
    judge_cache: Path | None = None
    judge_limits: JudgeLimits | None = None
    # The one limit on judge calls in flight of the run's event loop, which Gemini, provider
    # and Vertex AI judges share (judges/slots.py' JudgeSlots, or a semaphore a test gives).
    judge_semaphore: Any = None
    # The custom metrics' worker process (scoring/custom_metric_worker.py).
    custom_metric_worker: Any = None
    # Vertex AI metrics: their retry policy (a test gives its own), jitter and clients.
    vertex_retry: Any = None  # metrics/machinery/vertex.py's RetryPolicy (it imports this module)
    vertex_rng: random.Random | None = None
    vertex_clients: dict[Any, Any] = field(default_factory=dict)


@dataclass
class ScoringContext:
    """Services a metric may need (judges, caches). Deterministic metrics ignore it."""

    services: ScoringServices = field(default_factory=ScoringServices)

    async def scoring(self, awaitable: Any) -> Any:
        """Await ``awaitable`` (scoring in this event loop), then close the services that
        hold something of the loop (the judge's HTTP sessions, the custom metric worker)."""
        try:
            return await awaitable
        finally:
            for service in (self.services.judge, self.services.custom_metric_worker):
                if service is not None:
                    await service.aclose()


class Metric:
    """Base class. A subclass in any module of ``checker.metrics`` is registered by its name."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    criterion_model: ClassVar[type[BaseModel]] = Criterion
    informational: ClassVar[bool] = False
    needs_reference: ClassVar[bool] = True
    min_value: ClassVar[float] = 0.0
    max_value: ClassVar[float] = 1.0
    # Shown in the report next to the score: "higher" is better for every gating metric.
    unit: ClassVar[str] = ""

    def score(self, criterion: Any, run: RunInput,
              context: ScoringContext) -> RunScore | Awaitable[RunScore]:
        raise NotImplementedError


def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def pair_invocations(run: RunInput) -> list[tuple[Invocation, Invocation]]:
    """Actual and expected invocations by position; the caller checks the lengths first."""
    assert run.expected is not None
    return list(zip(run.actual, run.expected, strict=True))


def paired_tool_calls(run: RunInput) -> list[tuple[list[FunctionCall], list[FunctionCall]]]:
    """(actual, expected) tool calls of each turn; the caller checks the lengths first."""
    return [(tool_calls(a), tool_calls(e)) for a, e in pair_invocations(run)]


def reference_problem(run: RunInput) -> RunScore | None:
    """The not-evaluated/error verdict for a reference metric that cannot pair turns, else None."""
    if run.expected is None:
        return RunScore(not_evaluated_reason="the case has no reference conversation")
    if len(run.actual) != len(run.expected):
        return RunScore(error=f"the agent produced {len(run.actual)} invocation(s) but the case "
                              f"has {len(run.expected)} turn(s)")
    return None
