"""Rubric-judged metrics: which rubrics apply to which invocation, and the vote per rubric.

Effective rubrics of invocation *i*, in this order, duplicates by id merged when identical:
the criterion's ``rubrics`` (any type), the eval case's ``rubrics``, the expected invocation
*i*'s ``rubrics`` and the actual invocation *i*'s own ``rubrics``; from the last three only
those whose ``type`` is the metric's (e.g. ``FINAL_RESPONSE_QUALITY``) or that have no type.

Fixes of ADK bugs, on purpose: every invocation is judged and read against *its own* rubric
list (ADK reads every answer against the last invocation's rubrics), and an untyped case
rubric applies to every invocation (ADK drops it silently). One judge call per invocation and
sample covers all its rubrics; each rubric gets its own yes/no majority vote. The run's score
is the share of yes over every (invocation, rubric) verdict, as ``adk eval`` computes it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...judges.voting import majority
from ...models.evalset import Invocation, Rubric
from .judged import (LOWERED, JudgedCriterion, Sample, ask_samples, build_request,
                      failure_reason, gather_all, judge_details, object_schema, read_json_reply,
                      sample_failures, string_schema)
from ..base import InvocationScore, RunInput, RunScore, ScoringContext


class RubricsCriterion(JudgedCriterion):
    rubrics: list[Rubric] = Field(default_factory=list)


class RubricProblem(ValueError):
    """The rubrics of a case cannot be used (duplicate id with different text, no text...)."""


def _applies(rubric: Rubric, rubric_type: str) -> bool:
    return rubric.type is None or rubric.type.strip().upper() == rubric_type


def _text(rubric: Rubric) -> str:
    return (rubric.rubric_content.text_property or "").strip()


def effective_rubrics(criterion: RubricsCriterion, run: RunInput, index: int,
                      rubric_type: str) -> list[Rubric]:
    sources: list[tuple[str, list[Rubric]]] = [("the criterion", list(criterion.rubrics))]
    sources.append(("the eval case", [r for r in run.case.rubrics or [] if _applies(r, rubric_type)]))
    if run.expected is not None and index < len(run.expected):
        sources.append((f"expected invocation {index + 1}",
                        [r for r in run.expected[index].rubrics or [] if _applies(r, rubric_type)]))
    sources.append((f"invocation {index + 1} of the run",
                    [r for r in run.actual[index].rubrics or [] if _applies(r, rubric_type)]))
    return merge_rubrics(sources)


def merge_rubrics(sources: list[tuple[str, list[Rubric]]]) -> list[Rubric]:
    """The rubrics of ``(where, rubrics)`` sources in order; an id reused with other text is an error."""
    chosen: dict[str, tuple[str, Rubric]] = {}
    for where, rubrics in sources:
        for rubric in rubrics:
            if not _text(rubric):
                raise RubricProblem(f"rubric '{rubric.rubric_id}' in {where} has no "
                                    "rubric_content.text_property")
            seen = chosen.get(rubric.rubric_id)
            if seen is None:
                chosen[rubric.rubric_id] = (where, rubric)
            elif _text(seen[1]) != _text(rubric):
                raise RubricProblem(f"rubric id '{rubric.rubric_id}' is used in {seen[0]} and in "
                                    f"{where} with different text; give them different ids")
    return [r for _, r in chosen.values()]


def check_alignment(run: RunInput) -> None:
    """Per-invocation expected rubrics need the runs' invocations to line up with the case."""
    if run.expected is None or len(run.expected) == len(run.actual):
        return
    if any(inv.rubrics for inv in run.expected):
        raise RubricProblem(f"the agent produced {len(run.actual)} invocation(s) but the case has "
                            f"{len(run.expected)} turn(s), so its per-turn rubrics cannot be applied")


# ---------------------------------------------------------------- judge answers


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    for fancy, plain in (("\u2018", "'"), ("\u2019", "'"), ("\u201c", '"'), ("\u201d", '"'),
                         ("\u2013", "-"), ("\u2014", "-")):
        text = text.replace(fancy, plain)
    return " ".join(text.split()).strip(" *_`#>-\u2022\"'").lower()


class RubricVerdict(BaseModel):
    model_config = ConfigDict(extra="ignore")

    rubric_id: str
    evidence: str = ""
    rationale: str = ""
    verdict: Annotated[Literal["yes", "no"], LOWERED]


class RubricAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    verdicts: list[dict[str, Any]]


def answer_schema(with_evidence: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {"rubric_id": string_schema("The id of the property, as given.")}
    if with_evidence:
        fields["evidence"] = string_schema("The trusted evidence the decision rests on.")
    fields["rationale"] = string_schema("Why the property is or is not fulfilled.")
    fields["verdict"] = string_schema("yes or no", ["yes", "no"])
    return object_schema({"verdicts": {"type": "ARRAY", "items": object_schema(fields)}})


def properties_json(rubrics: list[Rubric]) -> list[dict[str, str]]:
    return [{"rubric_id": r.rubric_id, "property": _text(r)} for r in rubrics]


def parser(rubrics: list[Rubric]) -> Callable[[str], dict[str, RubricVerdict]]:
    """Read one answer into {rubric id: verdict}; ids are matched first, then property text."""
    by_text = {normalise(_text(r)): r.rubric_id for r in rubrics}
    ids = {r.rubric_id for r in rubrics}

    def parse(text: str) -> dict[str, RubricVerdict]:
        answer: RubricAnswer = read_json_reply(text, RubricAnswer)
        found: dict[str, RubricVerdict] = {}
        for raw in answer.verdicts:
            try:  # an entry that cannot be read only loses its own rubric
                verdict = RubricVerdict.model_validate(raw)
            except ValidationError:
                continue
            rid = verdict.rubric_id.strip()
            rid = rid if rid in ids else by_text.get(normalise(rid), rid)
            if rid in ids and rid not in found:
                found[rid] = verdict
        if not found:
            from ...judges.service import UnreadableReply

            raise UnreadableReply("the judge's answer has no readable verdict for any of the "
                                  "rubric ids", text)
        return found

    return parse


# ---------------------------------------------------------------- scoring


async def score_rubrics(criterion: RubricsCriterion, run: RunInput, context: ScoringContext,
                        rubric_type: str,
                        prompt_for: Callable[[RunInput, int, list[Rubric]], str],
                        with_evidence: bool) -> RunScore:
    try:
        check_alignment(run)
        rubric_lists = [effective_rubrics(criterion, run, i, rubric_type)
                        for i in range(len(run.actual))]
    except RubricProblem as exc:
        return RunScore(error=str(exc))
    if not any(rubric_lists):
        return RunScore(not_evaluated_reason=f"no rubrics apply: add rubrics to the criterion, or "
                                             f"rubrics of type {rubric_type} to the eval case")
    count = criterion.judge_model_options.num_samples
    schema = answer_schema(with_evidence)

    async def judge(i: int, rubrics: list[Rubric]) -> list[Sample]:
        if not rubrics:
            return []
        request = build_request(criterion, prompt_for(run, i, rubrics), schema)
        return await ask_samples(context, request, count, parser(rubrics))

    all_samples = await gather_all(*(judge(i, r) for i, r in enumerate(rubric_lists)))
    per_invocation: list[InvocationScore] = []
    pooled: list[float] = []
    per_rubric: dict[str, list[float]] = {}
    undecided: list[str] = []
    for n, (rubrics, samples) in enumerate(zip(rubric_lists, all_samples, strict=False), 1):
        if not rubrics:
            per_invocation.append(InvocationScore(details={"rubrics": [],
                                                           "note": "no rubrics apply"}))
            continue
        verdicts = vote_rubrics(rubrics, samples, with_evidence)
        for entry in verdicts:
            if entry["score"] is None:
                undecided.append(f"invocation {n}, rubric '{entry['rubricId']}': {entry['agreement']}")
            else:
                pooled.append(entry["score"])
                per_rubric.setdefault(entry["rubricId"], []).append(entry["score"])
        per_invocation.append(InvocationScore(score=verdicts_score(verdicts),
                                              details=verdict_details(verdicts, samples)))
    details = {**judge_details(criterion),
               "rubricScores": {rid: sum(v) / len(v) for rid, v in per_rubric.items()}}
    if undecided:
        why = first_failure(*(inv.details for inv in per_invocation))
        return RunScore(error="judge failed: " + "; ".join(undecided) + why,
                        invocations=per_invocation, details=details)
    return RunScore(score=sum(pooled) / len(pooled) if pooled else None,
                    invocations=per_invocation, details=details)


def vote_rubrics(rubrics: list[Rubric], samples: list[Sample],
                 with_evidence: bool) -> list[dict[str, Any]]:
    """One majority vote per rubric over the samples; a rubric an answer left out is a failed vote."""
    verdicts = []
    for rubric in rubrics:
        answers = [None if s.error else s.value.get(rubric.rubric_id) for s in samples]
        vote = majority([None if a is None else a.verdict == "yes" for a in answers])
        decision = vote.decision
        backing = [a for a in answers if a is not None and decision is not None
                   and (a.verdict == "yes") == decision]
        entry: dict[str, Any] = {
            "rubricId": rubric.rubric_id, "property": _text(rubric),
            "verdict": None if decision is None else ("yes" if decision else "no"),
            "score": None if decision is None else float(decision),
            "agreement": vote.agreement, "votes": vote.to_json(),
            "rationale": backing[0].rationale if backing else None}
        if with_evidence:
            entry["evidence"] = backing[0].evidence if backing else None
        missing = sum(1 for s, a in zip(samples, answers, strict=False) if s.error is None and a is None)
        if missing:
            entry["missingInSamples"] = missing
        verdicts.append(entry)
    return verdicts


def verdicts_score(verdicts: list[dict[str, Any]]) -> float | None:
    """Share of yes, or None while any rubric is undecided."""
    scores = [v["score"] for v in verdicts if v["score"] is not None]
    return sum(scores) / len(scores) if scores and len(scores) == len(verdicts) else None


def verdict_details(verdicts: list[dict[str, Any]], samples: list[Sample]) -> dict[str, Any]:
    details: dict[str, Any] = {"rubrics": verdicts}
    failures = sample_failures(samples)
    if failures:
        details["failedSamples"] = failures
    return details


def first_failure(*details: dict[str, Any]) -> str:
    reasons = [failure_reason(f) for d in details for f in d.get("failedSamples", [])]
    return f" ({reasons[0]})" if reasons else ""


def step_inputs(invocation: Invocation) -> Any:
    from .judged import tool_steps

    return tool_steps(invocation) or "No tool was called."
