"""What a judge said about a failing metric, read generically from ``MetricResult.details``.

Judge-backed metrics (Gemini rubric metrics, final_response_match_v2, hallucinations_v1,
the Vertex AI metrics, and any later one that follows the same conventions) put their
evidence in ``details``: run-level keys (``judgeModel``, ``numSamples``, ``backend``,
``worstRun``) and per-turn dicts in ``details["invocations"]``. Rather than one reader per
metric, this module recognises *shapes*:

* a list of verdict entries under ``rubrics``, ``rubricVerdicts``, ``criteria``,
  ``verdicts``, or ``steps[].sentences``: each entry names what was judged (``property``,
  ``rubric``, ``sentence``, ``name``, ``criterion``, ``rubricId``), a verdict (``verdict``
  yes/no/valid/invalid/bool, ``passes``/``passed`` bool, or a hallucination ``label``) and
  why (``rationale``, ``reasoning``, ``explanation``);
* a turn-level ``verdict`` with ``rationale`` / ``reasoning`` / ``explanation``;
* texts under ``expected`` / ``actual`` / ``response``;
* failed judge samples (``failedSamples``) and per-turn ``error`` / ``segmentationFailed``.

Pure functions over plain data; the caller escapes every string (judge text quotes agent
output). Strings are clipped here so one runaway rationale cannot crowd out the verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..models.results import MetricResult
from .text import clip, printable

MAX_TURNS = 3          # judged turns explained per metric
MAX_VERDICTS = 8       # verdicts not met, listed per turn
MAX_RATIONALE = 300    # characters of one rationale or explanation
MAX_LABEL = 200        # characters of the judged property or sentence
MAX_EVIDENCE = 200
MAX_TEXT = 1500        # characters of an expected / actual response

_LIST_KEYS = ("rubrics", "rubricVerdicts", "criteria", "categories", "verdicts")
_LABEL_KEYS = ("property", "rubric", "sentence", "name", "criterion", "category", "rubricId", "id")
_WHY_KEYS = ("rationale", "reasoning", "explanation", "reason")
_EVIDENCE_KEYS = ("evidence", "excerpt")
_TEXT_KEYS = (("expected", "Expected"), ("actual", "Actual"), ("response", "Response"),
              ("user", "Simulated user"))
_YES = {"yes", "valid", "pass", "passed", "true", "supported", "not_applicable", "safe"}
_NO = {"no", "invalid", "fail", "failed", "false", "unsupported", "contradictory", "disputed",
       "unsafe"}


@dataclass
class Verdict:
    """One judged item (a rubric, a sentence, a criterion) that was not met or not decided."""

    label: str
    verdict: str          # what the judge said: "no", "unsupported", "fail", "undecided"...
    ok: bool | None       # True met, False not met, None undecided
    agreement: str = ""   # e.g. "4/5"
    rationale: str = ""
    evidence: str = ""


@dataclass
class JudgeTurn:
    """A judged turn (``turn`` None: the whole conversation, or ``title``) of the run shown."""

    turn: int | None
    score: float | None
    title: str = ""        # a run-level check other than a turn, e.g. "stop signal check"
    verdict: str = ""      # a turn-level verdict, e.g. final_response_match_v2's "invalid"
    agreement: str = ""
    rationale: str = ""
    verdicts: list[Verdict] = field(default_factory=list)   # not met or undecided only
    met: int = 0           # verdicts met (not listed)
    hidden: int = 0        # verdicts not met beyond MAX_VERDICTS
    texts: list[tuple[str, str]] = field(default_factory=list)  # (heading, text)
    failed_samples: int = 0
    error: str = ""


@dataclass
class JudgeEvidence:
    run: int | None
    judge: str             # "gemini-2.5-flash, 5 samples" / "vertex-ai"
    turns: list[JudgeTurn]
    turns_hidden: int = 0


def _text(value: Any, limit: int) -> str:
    return clip(" ".join(printable(str(value)).split()), limit) if value is not None else ""


def _first(entry: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = entry.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _decision(entry: dict[str, Any]) -> tuple[bool | None, str] | None:
    """(met?, the word to show) for a verdict entry; None if the entry holds no verdict."""
    agreement = entry.get("agreement")
    undecided = isinstance(agreement, str) and agreement.startswith("undecided")
    for key in ("verdict", "passes", "passed", "label"):
        if key not in entry:
            continue
        value = entry[key]
        if value is None or undecided:
            return None, "undecided"
        if isinstance(value, bool):
            words = ("yes", "no") if key == "verdict" else ("pass", "fail")
            return value, words[0] if value else words[1]
        word = str(value).strip().lower()
        if word in _YES:
            return True, word
        if word in _NO:
            return False, word
        return None, word
    violated = entry.get("violated")  # a safety category: True is the bad outcome
    if isinstance(violated, bool):
        return not violated, "violated" if violated else "not violated"
    score = entry.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        return score >= 1.0, f"{score:.2f}"
    return None


def verdict_of(entry: dict[str, Any]) -> Verdict | None:
    decided = _decision(entry)
    if decided is None:
        return None
    ok, word = decided
    agreement = entry.get("agreement")
    agreement = agreement if isinstance(agreement, str) else ""
    why = _first(entry, _WHY_KEYS)
    if why is None and agreement.startswith("undecided"):
        why = agreement.removeprefix("undecided").lstrip(": ")  # how the samples split
    return Verdict(label=_text(_first(entry, _LABEL_KEYS) or "", MAX_LABEL), verdict=word, ok=ok,
                   agreement=agreement if "/" in agreement and not agreement.startswith("undecided")
                   else "",
                   rationale=_text(why, MAX_RATIONALE),
                   evidence=_text(_first(entry, _EVIDENCE_KEYS), MAX_EVIDENCE))


def verdict_entries(details: dict[str, Any]) -> list[dict[str, Any]]:
    """Every verdict-shaped entry of one turn's (or a run's) details, in order."""
    out: list[dict[str, Any]] = []
    for key in _LIST_KEYS:
        value = details.get(key)
        if isinstance(value, list):
            out += [e for e in value if isinstance(e, dict)]
    steps = details.get("steps")
    for step in steps if isinstance(steps, list) else []:
        if not isinstance(step, dict):
            continue
        failed = step.get("segmentationFailed")
        if isinstance(failed, dict):
            out.append({"label": None, "name": f"splitting the {step.get('kind', '')} response "
                        "into sentences", "reasoning": failed.get("error")})
        sentences = step.get("sentences")
        if isinstance(sentences, list):
            out += [e for e in sentences if isinstance(e, dict)]
    return out


def _failed_samples(details: dict[str, Any]) -> int:
    """Judge samples that failed on a turn, its own and those of its ``steps``."""
    steps = details.get("steps")
    parts = [details, *(s for s in steps if isinstance(s, dict))] if isinstance(steps, list) else [details]
    return sum(len(p["failedSamples"]) for p in parts if isinstance(p.get("failedSamples"), list))


def _turn(details: dict[str, Any], number: int | None) -> JudgeTurn | None:
    """The judge's evidence on one turn, or None when the details hold none."""
    entries = [v for v in (verdict_of(e) for e in verdict_entries(details)) if v is not None]
    own = _decision({k: details[k] for k in ("verdict", "agreement") if k in details}) \
        if "verdict" in details else None
    why = _first(details, _WHY_KEYS)
    failed_n = _failed_samples(details)
    error = details.get("error")
    if not entries and own is None and why is None and not failed_n and not isinstance(error, str):
        return None
    score = details.get("score")
    turn = JudgeTurn(turn=number, score=score if isinstance(score, (int, float)) else None,
                     rationale=_text(why, MAX_RATIONALE), failed_samples=failed_n,
                     error=_text(error, MAX_RATIONALE) if isinstance(error, str) else "")
    if own is not None:
        turn.verdict = own[1]
        agreement = details.get("agreement")
        if isinstance(agreement, str) and "/" in agreement and not agreement.startswith("undecided"):
            turn.agreement = agreement
    shown = [v for v in entries if v.ok is not True]
    turn.met = len(entries) - len(shown)
    turn.verdicts = shown[:MAX_VERDICTS]
    turn.hidden = len(shown) - len(turn.verdicts)
    turn.texts = [(heading, clip(printable(str(details[key])), MAX_TEXT))
                  for key, heading in _TEXT_KEYS if isinstance(details.get(key), str)]
    return turn


def _worth_showing(turn: JudgeTurn) -> bool:
    """A turn that explains a miss or an error: something not met, undecided or failed."""
    return bool(turn.verdicts or turn.failed_samples or turn.error
                or (turn.score is not None and turn.score < 1.0)
                or turn.verdict == "undecided")


def _words(key: str) -> str:
    """``stopSignalCheck`` -> ``stop signal check``."""
    return "".join(" " + c.lower() if c.isupper() else c for c in key).strip()


def judge_label(details: dict[str, Any]) -> str:
    parts = []
    backend = details.get("backend")
    if isinstance(backend, str) and backend:
        parts.append(backend)
    model = details.get("judgeModel")
    if isinstance(model, str) and model:
        samples = details.get("numSamples")
        parts.append(model + (f", {samples} samples" if isinstance(samples, int) and samples > 1
                              else ""))
    return " · ".join(parts)


def judge_evidence(metric: MetricResult) -> JudgeEvidence | None:
    """The judge's evidence for a failed or errored metric; None for a metric no judge scored."""
    details = metric.details if isinstance(metric.details, dict) else {}
    invocations = details.get("invocations")
    turns: list[JudgeTurn] = []
    for n, inv in enumerate(invocations if isinstance(invocations, list) else [], 1):
        if isinstance(inv, dict):
            turn = _turn(inv, n)
            if turn is not None:
                turns.append(turn)
    run = details.get("worstRun")
    run = run if isinstance(run, int) else None
    whole = _turn({k: v for k, v in details.items() if k not in ("invocations", "score")}, None)
    if whole is not None:  # a conversation-level verdict (Vertex multi-turn metrics)
        if run is not None and 0 < run <= len(metric.runs):
            whole.score = metric.runs[run - 1]
        turns.insert(0, whole)
    for key, value in details.items():  # a run-level check, e.g. the simulator's stop signal
        if key != "invocations" and isinstance(value, dict) and "verdict" in value:
            check = _turn(value, None)
            if check is not None:
                check.title = _words(key)
                turns.append(check)
    label = judge_label(details)
    if not turns and not label:
        return None
    interesting = [t for t in turns if _worth_showing(t)]
    # The lowest-scoring turns say most about why the mean missed; undecided ones first.
    interesting.sort(key=lambda t: -1.0 if t.score is None else t.score)
    return JudgeEvidence(run=run, judge=label,
                         turns=interesting[:MAX_TURNS],
                         turns_hidden=max(0, len(interesting) - MAX_TURNS))


def place(run: int | None, turn: int | None, title: str = "") -> str:
    return ", ".join(p for p in (f"run {run}" if run else "",
                                 f"turn {turn}" if turn else title or "whole conversation") if p)


def statements(turn: JudgeTurn) -> list[str]:
    """What the judge said on a turn, as plain-text items (logs, annotations); unescaped."""
    items = []
    if turn.verdict:
        items.append(f"judged {turn.verdict}" + (f": {turn.rationale}" if turn.rationale else ""))
    elif turn.rationale:
        items.append(turn.rationale)
    for v in turn.verdicts:
        label = f' "{v.label}"' if v.label else ""
        items.append(f"{v.verdict}{label}" + (f": {v.rationale}" if v.rationale else ""))
    if turn.error:
        items.append(f"judge error: {turn.error}")
    return items
