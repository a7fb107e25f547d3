"""The results file (CONTRACT section 4): what reports, annotations and the gate read."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import OutputModel

CaseStatus = Literal["passed", "failed", "error", "not_evaluated"]
MetricStatus = Literal["passed", "failed", "error", "not_evaluated", "informational"]
RunStatus = Literal["passed", "failed", "error", "not_evaluated"]


class RunResult(OutputModel):
    run: int
    status: RunStatus
    error: str | None = None
    duration_seconds: float | None = None
    stderr_tail: str | None = None


class MetricResult(OutputModel):
    name: str
    threshold: float | None
    score: float | None
    status: MetricStatus
    runs: list[float | None] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None

    @property
    def min_max(self) -> tuple[float, float] | None:
        scored = [s for s in self.runs if s is not None]
        return (min(scored), max(scored)) if scored else None


class CaseResult(OutputModel):
    eval_id: str
    status: CaseStatus
    line: int = 1
    runs: list[RunResult] = Field(default_factory=list)
    metrics: list[MetricResult] = Field(default_factory=list)


class EvalSetResult(OutputModel):
    eval_set_id: str
    path: str
    config_path: str | None = None
    cases: list[CaseResult] = Field(default_factory=list)


class Summary(OutputModel):
    eval_sets: int = 0
    cases: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    not_evaluated: int = 0


class Results(OutputModel):
    version: Literal[1] = 1
    passed: bool
    summary: Summary
    eval_sets: list[EvalSetResult] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def failing_cases(self) -> list[tuple[EvalSetResult, CaseResult]]:
        return [(s, c) for s in self.eval_sets for c in s.cases if c.status != "passed"]
