"""Publish results to a pull request: sticky comment, check run with annotations, status.

Every write may be refused (a fork PR's read-only token, a workflow without
``permissions:``); a refusal becomes a warning and never changes the job's verdict, which
is the evaluation's. The job summary and outputs are written by the caller regardless.
"""

# No ``from __future__ import annotations``: this module's annotations() would shadow it.
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...compare.gate import accepted_keys
from ...errors import InputError
from ...models.results import CaseResult, Results
from ...report.judged import place, statements
from ...report.markdown import Links, explain, render_within
from ...report.text import clip, printable, utf16_len
from ...safety.text import one_line
from .client import DEFAULT_BUDGET, GitHubClient, GitHubError
from .workflow import Commands

COMMENT_LIMIT = 65536        # characters (server-side, not in the OpenAPI description)
CHECK_TEXT_LIMIT = 65535     # output.summary maxLength in the OpenAPI description
STATUS_DESCRIPTION_LIMIT = 140
ANNOTATION_BATCH = 50        # per create/update request
ANNOTATION_CAP = 1000        # per check run, so a broken eval set cannot spin for minutes
WORKFLOW_ANNOTATION_CAP = 10  # error annotations the runner keeps per step
FORKS_DOC = "docs/github-action.md#pull-requests-from-forks"
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_comment_key(key: str) -> str:
    # The key goes into an HTML comment and a check name: keep it plain.
    if not _KEY.match(key):
        raise InputError(f"comment-key {key!r} must be letters, digits, '.', '_' or '-' (at most 64)",
                         fix="e.g. comment-key: ${{ matrix.agent }}")
    return key


def marker(key: str) -> str:
    return f"<!-- evalcheck:{key} -->"


@dataclass(frozen=True)
class PublishOptions:
    comment: str = "update"      # update | new | off
    comment_key: str = "default"
    check_run: bool = True
    commit_status: bool = False
    gate_failed: bool = True     # whether the job fails on these results (fail-on applied)
    fail_on: str = "failure"     # the gate's rule, stated in the headline and the check title
    template: Path | None = None
    budget: float = DEFAULT_BUDGET  # seconds for every GitHub call of the job together

    @property
    def check_name(self) -> str:
        return "evalcheck" if self.comment_key == "default" else f"evalcheck ({self.comment_key})"

    @property
    def status_context(self) -> str:
        return "evalcheck" if self.comment_key == "default" else f"evalcheck/{self.comment_key}"


@dataclass
class Target:
    """Where to publish: the repository, the PR (if any) and the commit to attach checks to."""

    owner: str
    repo: str
    sha: str
    pr_number: int | None = None
    run_url: str | None = None
    blob_base: str | None = None


@dataclass
class PublishOutcome:
    comment_url: str | None = None
    check_run_url: str | None = None
    status_posted: bool = False
    annotations: int = 0
    warnings: list[str] = field(default_factory=list)


def verdict_words(results: Results) -> str:
    s = results.summary
    if results.passed:
        return f"{s.passed} of {s.cases} eval cases passed"
    bad = [f"{s.failed} failed"] if s.failed else []
    bad += [f"{s.errored} errored"] if s.errored else []
    bad += [f"{s.not_evaluated} not evaluated"] if s.not_evaluated else []
    return f"{s.passed} of {s.cases} eval cases passed; " + ", ".join(bad)


def conclusion(results: Results, gate_failed: bool) -> str:
    # A miss that does not fail the job (fail-on: never / error) is advisory: neutral.
    if results.passed:
        return "success"
    return "failure" if gate_failed else "neutral"


def render_body(results: Results, target: Target, options: PublishOptions, limit: int,
                measure: Callable[[str], int] = utf16_len, prefix: str = "") -> str:
    links = Links(run_url=target.run_url, blob_base=target.blob_base)
    text, _ = render_within(results, limit, measure, template=options.template,
                            extra={"links": links, "fail_on": options.fail_on},
                            reserve=measure(prefix) + 16)
    return prefix + text


# --- annotations --------------------------------------------------------------------------

def annotation_message(case: CaseResult) -> str:
    """Plain text (annotations are not markdown): each failing metric and errored run."""
    lines = []
    for ex in explain(case)[0]:
        if ex.kind == "trajectory":
            row = next((r for r in ex.calls if r.diverges), None)
            where = (f" at call {ex.first_divergence}: expected {row.expected or '(no call)'},"
                     f" got {row.actual or '(no call)'}" if row else "")
            lacking = [f"{word} {', '.join(calls)}" for word, calls in (
                ("missing", ex.missing), ("out of order", ex.out_of_order), ("extra", ex.extra)) if calls]
            if lacking:  # IN_ORDER / ANY_ORDER: what the match type lacks, not a position
                where = f", {ex.match_type}: " + "; ".join(lacking)
            lines.append(f"{ex.metric} {ex.score} < {ex.threshold} (run {ex.run}, turn {ex.turn}){where}")
        elif ex.kind == "f1":
            parts = [f"missing {', '.join(ex.missing)}"] if ex.missing else []
            parts += [f"unexpected {', '.join(ex.unexpected)}"] if ex.unexpected else []
            lines.append(f"{ex.metric} {ex.score} < {ex.threshold} (run {ex.run}, turn {ex.turn}): " + "; ".join(parts))
        elif ex.kind == "response":
            lines.append(f"{ex.metric} {ex.score} < {ex.threshold} (run {ex.run}, turn {ex.turn}): "
                         f"got {one_line(ex.actual_text, 300)!r}")
        elif ex.kind == "judge" and ex.evidence is not None:
            said = "; ".join(one_line(s, 300) for s in statements(ex.evidence)[:4])
            lead = f"{ex.metric} {ex.score} < {ex.threshold}" if ex.evidence.score is not None else ex.metric
            lines.append(f"{lead} ({place(ex.run, ex.turn, ex.evidence.title)}): {said}")
        elif ex.kind == "run_refused":
            lines.append(f"agent run {ex.run}: the model service refused it (no verdict): "
                         f"{one_line(ex.error, 500)}")
        elif ex.kind == "run_error":
            lines.append(f"agent run {ex.run} errored: {one_line(ex.error, 500)}")
        elif ex.kind == "run_not_run":
            lines.append(f"agent run {ex.run} not evaluated: {one_line(ex.error, 500)}")
        elif ex.kind == "metric_error":
            lines.append(f"{ex.metric} could not be computed (metric error): {one_line(ex.error, 500)}")
        elif ex.kind == "not_evaluated":
            lines.append(f"{ex.metric}: {one_line(ex.error, 500)}")
        else:
            lines.append(f"{ex.metric} {ex.score} < {ex.threshold}"
                         + (f" (run {ex.run}, turn {ex.turn})" if ex.turn else ""))
        if ex.notes:  # what the evidence alone does not show (report/differences.py)
            lines[-1] += ": " + "; ".join(one_line(n, 300) for n in ex.notes[:3])
    return clip(printable("\n".join(lines) or f"case {case.status}"), 8000)


def regression_line(case: CaseResult) -> str:
    """Plain text: what dropped against the baseline, e.g. ``regressed against the baseline:
    tool_trajectory_avg_score 1.00 -> 0.00 (p of the pass rate 0.05)``."""
    drops = [f"{m.name} {m.baseline_score:.2f} -> {m.score:.2f}"
             + (f" (p of the pass rate {m.p_value:.2f})" if m.p_value is not None else "")
             for m in case.metrics
             if m.delta is not None and m.delta < 0 and m.baseline_score is not None and m.score is not None]
    return "regressed against the baseline" + (": " + "; ".join(drops) if drops else "")


def annotations(results: Results) -> list[dict[str, Any]]:
    """One per failing or regressed case, regressions first (the caps keep the first ones)."""
    regressions: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    accepted = accepted_keys(results)
    for eval_set in results.eval_sets:
        for case in eval_set.cases:
            regressed = case.change == "regressed"
            if case.status == "passed" and not regressed:
                continue
            status = case.status.replace("_", " ")
            message = annotation_message(case) if case.status != "passed" else ""
            # Overridden (docs/quarantine.md): said first, and a warning, not a failure.
            override = ""
            if case.quarantined is not None:
                q = case.quarantined
                override = f"quarantined until {q.expires} ({q.owner}: {q.reason}); not gating"
            elif regressed and (eval_set.eval_set_id, case.eval_id) in accepted:
                acceptance = results.comparison.accepted if results.comparison is not None else None
                override = f"regression accepted by label {acceptance.label if acceptance else ''}"
            level = "warning" if case.status in ("not_evaluated", "passed") or override else "failure"
            (regressions if regressed else others).append({
                "path": eval_set.path, "start_line": case.line, "end_line": case.line,
                "annotation_level": level,
                "title": one_line(f"{case.eval_id}: {status}" + (", regressed" if regressed else "")
                                  + (", quarantined" if case.quarantined is not None else
                                     ", accepted" if override else ""), 255),
                "message": clip(printable("\n".join(filter(None, [
                    override, regression_line(case) if regressed else "", message]))), 8000),
            })
    return regressions + others


# --- the three publications -----------------------------------------------------------------

def _refused(what: str, exc: GitHubError) -> str:
    hint = ""
    if exc.forbidden:
        need = f" (needs {exc.accepted_permissions})" if exc.accepted_permissions else ""
        hint = (f"; the token cannot write{need}. A pull request from a fork gets a read-only "
                f"token: see {FORKS_DOC}. Otherwise add the permission to the workflow's "
                "`permissions:` block")
    return f"evalcheck could not {what}: HTTP {exc.status} {one_line(exc.message, 200)}{hint}"


def create_once(client: GitHubClient, create: Callable[[], dict[str, Any]],
                find: Callable[[], dict[str, Any] | None]) -> dict[str, Any]:
    """A create (POST) whose answer may be lost: after a 5xx or a network error it may have
    been carried out, so ``find`` looks for it before it is tried again (no duplicates)."""
    attempts = client.retry.attempts
    for attempt in range(1, attempts + 1):
        try:
            return create()
        except GitHubError as exc:
            if not exc.maybe_applied or attempt == attempts:
                raise
            try:
                found = find()
            except GitHubError:
                raise exc from None  # cannot tell whether it was done: no blind retry
            if found is not None:
                return found
            client.pause(client.retry.backoff * 2 ** (attempt - 1), exc)
    raise AssertionError("unreachable")


def _url(answer: dict[str, Any], what: str, warnings: list[str]) -> str | None:
    url = answer.get("html_url")
    if isinstance(url, str) and url:
        return url
    warnings.append(f"evalcheck posted the {what}, but GitHub's answer had no html_url")
    return None


def post_comment(client: GitHubClient, target: Target, body: str, mode: str, key: str,
                 warnings: list[str] | None = None) -> str | None:
    """Create or update the sticky comment; returns its URL."""
    assert target.pr_number is not None
    warnings = warnings if warnings is not None else []
    tag = marker(key)
    number = target.pr_number

    def listed() -> list[dict[str, Any]]:
        # The marker opens our comment's body; anywhere else it may be quoted text (an
        # agent's answer in a code block of another key's report) and must not match.
        return [c for c in client.list_issue_comments(target.owner, target.repo, number)
                if isinstance(c.get("body"), str) and c["body"].lstrip().startswith(tag)]

    seen = listed()
    if mode == "update":
        # Prefer a bot's comment: anyone can paste the marker into a comment of their own.
        mine = sorted(seen, key=lambda c: ((c.get("user") or {}).get("type") == "Bot", c.get("id", 0)))
        if mine:
            try:
                answer = client.update_issue_comment(target.owner, target.repo, mine[-1]["id"], body)
                return _url(answer, "PR comment", warnings)
            except GitHubError as exc:
                # 403/404: not ours to edit (someone pasted the marker, or another token's
                # comment); a new comment is still possible. A fork's token fails there too.
                if exc.status not in (403, 404):
                    raise
    before = {c.get("id") for c in seen}

    def find() -> dict[str, Any] | None:
        new = [c for c in listed() if c.get("id") not in before]
        return new[-1] if new else None

    answer = create_once(client, lambda: client.create_issue_comment(target.owner, target.repo, number, body),
                         find)
    return _url(answer, "PR comment", warnings)


def post_check_run(client: GitHubClient, target: Target, results: Results, options: PublishOptions,
                   summary: str, warnings: list[str] | None = None) -> tuple[str, int]:
    """Create the check run complete, with its conclusion and the first annotations; then
    append the other batches. A batch GitHub refuses is a warning: the check run and its
    conclusion stand. Returns (URL, annotations posted)."""
    warnings = warnings if warnings is not None else []
    notes = annotations(results)
    dropped = max(0, len(notes) - ANNOTATION_CAP)
    notes = notes[:ANNOTATION_CAP]
    from ...compare.headline import headline

    # The one sentence and its lines (what the pull request brought that the gate read, what
    # became of an accept label: a reviewer must see them without opening the check), then
    # the counts; cut to GitHub's 255 below.
    said = headline(results, options.fail_on)
    title = "; ".join([said.sentence.removesuffix("."), *said.lines]) + " · " + verdict_words(results)
    if dropped:
        title += f" ({dropped} annotations not shown)"
    output = {"title": clip(title, 255), "summary": summary}
    batches = [notes[i:i + ANNOTATION_BATCH] for i in range(0, len(notes), ANNOTATION_BATCH)] or [[]]
    attempt_id = f"evalcheck-{uuid.uuid4().hex}"  # finds this create if its answer is lost
    payload: dict[str, Any] = {"name": options.check_name, "head_sha": target.sha,
                               "external_id": attempt_id, "status": "completed",
                               "conclusion": conclusion(results, options.gate_failed),
                               "output": {**output, "annotations": batches[0]}}
    if target.run_url:
        payload["details_url"] = target.run_url

    def find() -> dict[str, Any] | None:
        runs = client.list_check_runs(target.owner, target.repo, target.sha, options.check_name)
        return next((r for r in runs if r.get("external_id") == attempt_id), None)

    created = create_once(client, lambda: client.create_check_run(target.owner, target.repo, payload), find)
    url = _url(created, "check run", warnings) or ""
    posted = len(batches[0])
    if len(batches) > 1 and not isinstance(created.get("id"), int):
        warnings.append("evalcheck could not add annotations to the check run: GitHub's answer had no id")
        return url, posted
    for batch in batches[1:]:
        try:
            client.update_check_run(target.owner, target.repo, created["id"],
                                    {"output": {**output, "annotations": batch}})
        except GitHubError as exc:
            # Not resent: a lost answer may mean the batch is there already.
            warnings.append(_refused(f"add annotations {posted + 1}-{len(notes)} of {len(notes)} "
                                     "to the check run (its conclusion stands)", exc))
            break
        posted += len(batch)
    return url, posted


def post_status(client: GitHubClient, target: Target, results: Results, options: PublishOptions) -> None:
    state = "success" if results.passed or not options.gate_failed else "failure"
    payload: dict[str, Any] = {"state": state, "context": options.status_context,
                               "description": one_line(verdict_words(results), STATUS_DESCRIPTION_LIMIT)}
    if target.run_url:
        payload["target_url"] = target.run_url
    client.create_status(target.owner, target.repo, target.sha, payload)


def workflow_annotations(results: Results, commands: Commands) -> int:
    """``::error file=..,line=..::`` lines: annotate without ``checks: write`` (fork PRs)."""
    notes = annotations(results)[:WORKFLOW_ANNOTATION_CAP]
    for note in notes:
        issue = commands.warning if note["annotation_level"] == "warning" else commands.error
        issue(note["message"], file=note["path"], line=note["start_line"], title=note["title"])
    return len(notes)


def publish(client: GitHubClient, results: Results, target: Target, options: PublishOptions,
            commands: Commands) -> PublishOutcome:
    outcome = PublishOutcome()
    check_posted = False
    if options.comment != "off":
        if target.pr_number is None:
            commands.notice("evalcheck: not a pull request, so no PR comment")
        else:
            try:
                prefix = marker(options.comment_key) + "\n"
                body = render_body(results, target, options, COMMENT_LIMIT, prefix=prefix)
                outcome.comment_url = post_comment(client, target, body, options.comment,
                                                   options.comment_key, outcome.warnings)
            except GitHubError as exc:
                outcome.warnings.append(_refused("post the PR comment", exc))
    if options.check_run:
        if not target.sha:
            outcome.warnings.append("evalcheck could not create a check run: no commit SHA")
        else:
            try:
                summary = render_body(results, target, options, CHECK_TEXT_LIMIT)
                outcome.check_run_url, outcome.annotations = post_check_run(
                    client, target, results, options, summary, outcome.warnings)
                check_posted = True
            except GitHubError as exc:
                outcome.warnings.append(_refused("create the check run", exc))
    if options.commit_status and target.sha:
        try:
            post_status(client, target, results, options)
            outcome.status_posted = True
        except GitHubError as exc:
            outcome.warnings.append(_refused("set the commit status", exc))
    for warning in outcome.warnings:
        commands.warning(warning)
    if not check_posted and (not results.passed or any(
            c.change == "regressed" for s in results.eval_sets for c in s.cases)):
        outcome.annotations = workflow_annotations(results, commands)
    return outcome
