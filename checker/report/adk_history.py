"""``--adk-eval-history DIR``: results that ``adk web`` opens.

One ADK ``EvalSetResult`` per eval set, named and shaped as google-adk's
``LocalEvalSetResultsManager`` writes them (snake_case):
``DIR/<app>/.adk/eval_history/<app>_<eval_set_id>_<time.time()>.evalset_result.json``, and the
eval set itself at ``DIR/<app>/<eval_set_id>.evalset.json`` (where adk web's
``LocalEvalSetsManager`` reads it), unless a file is there already.

Each run of a case is one ``EvalCaseResult`` (as ADK's AgentEvaluator saves its num_runs
runs): its metrics' scores and statuses on that run, every invocation's scores beside the
actual and expected invocation, and the run's conversation as the session's events (adk web's
drill-down). The case's verdict over its runs is evalcheck's results file's; with one run
both agree. Written without google-adk (a runtime dependency it is not); tests load the files
with google-adk's own models. docs/adk-users.md#open-the-results-in-adk-web.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..models.evalset import Content, EvalSet, IntermediateData, Invocation, InvocationEvents, Part
from ..models.records import RecordedRun
from ..models.results import CaseResult, Results, RunVerdicts
from ..safety.redact import Redactor
from .writes import OutputFiles

HISTORY_DIR = (".adk", "eval_history")
RESULT_SUFFIX = ".evalset_result.json"
EVAL_SET_SUFFIX = ".evalset.json"
DEFAULT_USER_ID = "test_user_id"  # ADK's, for a case without session_input
# ADK's EvalStatus (serialized as its number).
PASSED, FAILED, NOT_EVALUATED, INFORMATIONAL = 1, 2, 3, 4
STATUS = {"passed": PASSED, "failed": FAILED, "error": FAILED, "not_evaluated": NOT_EVALUATED,
          "informational": INFORMATIONAL}
_DRIVE = re.compile(r"[A-Za-z]:")


def segment_problem(value: str) -> str | None:
    """Why ADK's ``validate_path_segment`` refuses ``value`` as an app name or id, else None."""
    if not value:
        return "it is empty"
    if "\x00" in value or "/" in value or "\\" in value:
        return "it holds a path separator or NUL"
    if _DRIVE.match(value) or value in (".", ".."):
        return "it reads as a drive or a traversal segment"
    return None


@dataclass
class HistorySet:
    """What the history needs of one eval set, taken before scoring lets its cases go."""
    key: str  # the run's key of the eval set (checker/models/setkey.py)
    eval_set_id: str
    path: str  # as in the results
    app_name: str
    eval_set: dict[str, Any]  # ADK's EvalSet JSON (snake_case) of the selected cases
    users: dict[str, tuple[str, dict[str, Any]]]  # case id -> (user id, initial state)
    problem: str | None = None  # why it cannot be written (said, then skipped)


@dataclass
class HistoryPlan:
    directory: Path
    sets: list[HistorySet]
    # Each case's per-run verdicts, taken from the scored results (set key, case id).
    verdicts: dict[tuple[str, str], list[RunVerdicts]] = field(default_factory=dict)


def plan_history(directory: Path, targets: list[Any], app_name: str | None) -> HistoryPlan:
    """Snapshot each target's eval set (``EvalTarget``s of this run, cases loaded)."""
    sets = []
    for target in targets:
        eval_set: EvalSet = target.loaded.eval_set
        wanted = set(target.case_ids)
        cases = [c for c in eval_set.eval_cases if c.eval_id in wanted]
        app = app_name or next((c.session_input.app_name for c in cases if c.session_input), None) \
            or target.loaded.path.resolve().parent.name
        dumped = eval_set.model_copy(update={"eval_cases": cases}).model_dump(
            mode="json", by_alias=False, exclude_none=True)
        users = {c.eval_id: (c.session_input.user_id, dict(c.session_input.state))
                 if c.session_input else (DEFAULT_USER_ID, {}) for c in cases}
        problem = None
        for what, value in (("app name", app), ("eval set id", eval_set.eval_set_id)):
            reason = segment_problem(value)
            if reason and problem is None:
                problem = (f"{target.loaded.display_path}: not written to the ADK eval history: "
                           f"its {what} {value!r} cannot name a file for ADK ({reason})")
        sets.append(HistorySet(key=target.key, eval_set_id=eval_set.eval_set_id,
                               path=target.loaded.display_path, app_name=app, eval_set=dumped,
                               users=users, problem=problem))
    return HistoryPlan(directory=directory, sets=sets)


def keep_verdicts(plan: HistoryPlan, results: Results) -> None:
    """The per-run verdicts of the scored cases (not written in the results file)."""
    by_path = {(s.eval_set_id, s.path): s.key for s in plan.sets}
    for eval_set in results.eval_sets:
        key = by_path.get((eval_set.eval_set_id, eval_set.path))
        for case in eval_set.cases:
            if key is not None and case.run_verdicts is not None:
                plan.verdicts[(key, case.eval_id)] = case.run_verdicts


def write_eval_history(plan: HistoryPlan, results: Results,
                       runs: Mapping[tuple[str, str], list[RecordedRun]], redactor: Redactor,
                       files: OutputFiles, confine: Path | None = None) -> list[str]:
    """Write every eval set's EvalSetResult (and eval set file where none is); the lines to
    say: what was written, and what was not and why."""
    lines, written, stamp = [], set(), 0.0
    cases_of = {(s.eval_set_id, s.path): s.cases for s in results.eval_sets}
    for hset in plan.sets:
        if hset.problem:
            lines.append(f"warning: {hset.problem}")
            continue
        folder = plan.directory / hset.app_name
        stamp = max(time.time(), stamp + 1e-6)  # each file its own name, as ADK's clock gives
        result_id = f"{hset.app_name}_{hset.eval_set_id}_{stamp}"
        name = result_id.replace("/", "_")
        case_results = [case_result for case in cases_of.get((hset.eval_set_id, hset.path), [])
                        for case_result in _case_results(hset, case, plan, runs, redactor)]
        document = {"eval_set_result_id": result_id, "eval_set_result_name": name,
                    "eval_set_id": hset.eval_set_id, "eval_case_results": case_results,
                    "creation_timestamp": stamp}
        import json

        target = folder.joinpath(*HISTORY_DIR, name + RESULT_SUFFIX)
        if _write(files, target, json.dumps(document, indent=2, ensure_ascii=False), confine,
                  "ADK eval history file"):
            lines.append(f"ADK eval history: wrote {target}")
        beside = folder / (hset.eval_set_id + EVAL_SET_SUFFIX)
        if (hset.app_name, hset.eval_set_id) in written or beside.exists() or beside.is_symlink():
            continue  # never replaces a file (the user's own eval set, when DIR is the agents dir)
        written.add((hset.app_name, hset.eval_set_id))
        _write(files, beside, json.dumps(hset.eval_set, indent=2, ensure_ascii=False) + "\n",
               confine, "eval set for adk web")
    return lines


def _write(files: OutputFiles, path: Path, text: str, confine: Path | None, what: str) -> bool:
    def write() -> None:
        if confine is not None:  # the agent's user had the workspace: no link is followed
            from ..errors import InputError
            from ..safety.confine import unbend_output

            try:
                unbend_output(path, confine)
            except InputError as exc:
                raise OSError(str(exc)) from None
        path.parent.mkdir(parents=True, exist_ok=True)
        from .writes import write_fresh

        write_fresh(path, text)

    return files.attempt(what, path, write)


def _case_results(hset: HistorySet, case: CaseResult, plan: HistoryPlan,
                  runs: Mapping[tuple[str, str], list[RecordedRun]], redactor: Redactor) -> list[dict[str, Any]]:
    """One EvalCaseResult per run of the case, in run order (none for a case not run)."""
    verdicts = {v.run: v for v in plan.verdicts.get((hset.key, case.eval_id), [])}
    expected = next((c.get("conversation") for c in hset.eval_set.get("eval_cases", [])
                     if c.get("eval_id") == case.eval_id), None)
    user_id, state = hset.users.get(case.eval_id, (DEFAULT_USER_ID, {}))
    out = []
    for run in sorted(runs.get((hset.key, case.eval_id), []), key=lambda r: r.run):
        run = redactor.model(run)
        session_id = f"evalcheck-{case.eval_id}-run-{run.run}"
        verdict = verdicts.get(run.run) if run.error is None else None
        overall = [_metric(m.name, m.threshold, m.score, STATUS[m.status])
                   for m in (verdict.metrics if verdict else [])]
        per_invocation = []
        for n, invocation in enumerate(run.invocations):
            reference = expected[n] if expected is not None and n < len(expected) else None
            scores = [_metric(m.name, m.threshold, _at(m.invocations, n, len(run.invocations)),
                              _invocation_status(m.status, m.threshold,
                                                 _at(m.invocations, n, len(run.invocations))))
                      for m in (verdict.metrics if verdict else [])]
            per_invocation.append({"actual_invocation": _dump(invocation),
                                   "expected_invocation": reference, "eval_metric_results": scores})
        out.append({
            "eval_set_file": None, "eval_set_id": hset.eval_set_id, "eval_id": case.eval_id,
            "final_eval_status": _final_status(run, verdict), "eval_metric_results": None,
            "overall_eval_metric_results": overall,
            "eval_metric_result_per_invocation": per_invocation, "session_id": session_id,
            "session_details": _session(session_id, hset.app_name, user_id, state, run),
            "user_id": user_id})
    return out


def _final_status(run: RecordedRun, verdict: RunVerdicts | None) -> int:
    """ADK's walk over the metric statuses, where an errored metric is a failure (evalcheck
    never lets a metric it could not compute pass a case); an agent that failed: FAILED."""
    if run.error is not None or verdict is None:
        return FAILED
    statuses = [m.status for m in verdict.metrics]
    if any(s in ("failed", "error") for s in statuses):
        return FAILED
    return PASSED if "passed" in statuses else NOT_EVALUATED


def _at(scores: list[float | None], n: int, invocations: int) -> float | None:
    """The n-th invocation's score when the metric scored each invocation, else None."""
    return scores[n] if len(scores) == invocations else None


def _invocation_status(status: str, threshold: float | None, score: float | None) -> int:
    if status == "informational":
        return INFORMATIONAL
    if score is None or threshold is None:
        return NOT_EVALUATED
    return PASSED if score >= threshold else FAILED


def _metric(name: str, threshold: float | None, score: float | None, status: int) -> dict[str, Any]:
    return {"metric_name": name, "threshold": threshold,
            "criterion": {"threshold": threshold} if threshold is not None else None,
            "custom_function_path": None, "score": score, "eval_status": status,
            "details": {"rubric_scores": None, "token_usage_details": None, "duration_details": None}}


def _dump(model: Invocation | Content | Part) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=False, exclude_none=True)


def _session(session_id: str, app: str, user_id: str, state: dict[str, Any],
             run: RecordedRun) -> dict[str, Any]:
    """The run's conversation as ADK session events: each turn's user message, what the
    agent did in between (its events, or its tool calls, tool responses and intermediate
    responses) and its final response."""
    events: list[dict[str, Any]] = []
    start = next((i.creation_timestamp for i in run.invocations if i.creation_timestamp), 0.0) \
        or time.time()
    agent = app

    def add(invocation: Invocation, author: str, content: Content | None) -> None:
        when = (invocation.creation_timestamp or start) + len(events) * 1e-3
        events.append({"id": f"{session_id}-{len(events) + 1}", "invocation_id":
                       invocation.invocation_id or f"{session_id}-turn", "author": author,
                       "content": _dump(content) if content is not None else None,
                       "timestamp": when})

    for invocation in run.invocations:
        add(invocation, "user", invocation.user_content)
        data = invocation.intermediate_data
        if isinstance(data, InvocationEvents):
            for event in data.invocation_events:
                agent = event.author if event.author != "user" else agent
                add(invocation, event.author, event.content)
        elif isinstance(data, IntermediateData):
            if data.tool_uses:
                add(invocation, agent, Content(role="model", parts=[
                    Part(function_call=c) for c in data.tool_uses]))
            if data.tool_responses:
                add(invocation, agent, Content(role="user", parts=[
                    Part(function_response=r) for r in data.tool_responses]))
            for author, parts in data.intermediate_responses:
                add(invocation, author, Content(role="model", parts=list(parts)))
        if invocation.final_response is not None:
            add(invocation, agent, invocation.final_response)
    return {"id": session_id, "app_name": app, "user_id": user_id, "state": state,
            "events": events, "last_update_time": events[-1]["timestamp"] if events else start}
