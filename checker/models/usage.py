"""Token usage (CONTRACT section 9): what a run's agent and its judges spent, in the results.

Per run ``usage: {agent: {input, output}, judge: {input, output}}``, per case the sum of its
runs, in ``summary`` the sum of every case. ``simulator``: the Gemini calls of a
conversation_scenario run's simulated user. ``vertexInstances``: the instances the Vertex AI
evaluation service scored, which answers with no token counts (docs/cost.md).
``input`` counts the prompt tokens (tool-use
prompt tokens included, cached ones too: they are part of the prompt), ``output`` the
candidates and thoughts (reasoning) tokens, as token_usage_v1 counts them. ``models`` splits
the counts by model where the model is known (a judge's always, an agent's when its events
name their ``model_version``): what a price table turns into a cost.

A side is absent when nothing was counted for it (a replayed run without usage, a case no
judge scored): absent is "not reported", never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import Field

from .base import OutputModel


class ModelTokens(OutputModel):
    input: int = 0
    output: int = 0


def _unset(value: Any) -> bool:
    return value is None


class Tokens(ModelTokens):
    # Counts by model name, when known; "" collects the counts no model was named for.
    models: dict[str, ModelTokens] | None = Field(default=None, exclude_if=_unset)

    @property
    def total(self) -> int:
        return self.input + self.output

    def add(self, input: int, output: int, model: str | None = None) -> None:
        self.input += input
        self.output += output
        if self.models is None:
            self.models = {}
        found = self.models.setdefault(model or "", ModelTokens())
        found.input += input
        found.output += output


def sum_tokens(items: Iterable[Tokens | None]) -> Tokens | None:
    """The sum of the counts given, None when none was."""
    total: Tokens | None = None
    for item in items:
        if item is None:
            continue
        total = total or Tokens()
        total.input += item.input
        total.output += item.output
        for name, counts in (item.models or {}).items():
            total.models = total.models or {}
            found = total.models.setdefault(name, ModelTokens())
            found.input += counts.input
            found.output += counts.output
    return total


class Usage(OutputModel):
    agent: Tokens | None = Field(default=None, exclude_if=_unset)
    judge: Tokens | None = Field(default=None, exclude_if=_unset)
    simulator: Tokens | None = Field(default=None, exclude_if=_unset)
    # Instances scored by the Vertex AI evaluation service: its answer has no usage field,
    # so these are counted, never priced.
    vertex_instances: int | None = Field(default=None, exclude_if=_unset)
    # Estimated cost in US dollars (--prices): {agent, judge, simulator, total}; a side whose models
    # have no price is absent (summary only; see report/cost.py).
    cost: dict[str, Any] | None = Field(default=None, exclude_if=_unset)

    def empty(self) -> bool:
        return self.agent is None and self.judge is None and self.simulator is None \
            and self.vertex_instances is None


def sum_usage(given: Iterable[Usage | None]) -> Usage | None:
    items = [u for u in given if u is not None]
    if not items:
        return None
    instances = [u.vertex_instances for u in items if u.vertex_instances is not None]
    usage = Usage(agent=sum_tokens(u.agent for u in items), judge=sum_tokens(u.judge for u in items),
                  simulator=sum_tokens(u.simulator for u in items),
                  vertex_instances=sum(instances) if instances else None)
    return None if usage.empty() else usage


MAX_TOKEN_COUNT = 2 ** 53  # past this a count is not a count (and no float holds it exactly)


def _bad_count(value: Any) -> bool:
    """A token count that is not an integer in [0, 2^53]: what genai's model reads as an int
    (an int, an integral float, a string of digits) within the bounds is fine; None is
    "not reported"."""
    if value is None:
        return False
    if isinstance(value, str):
        text = value.strip()
        if not text.isdigit() or len(text) > 16:
            return True
        value = int(text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return True
    return not 0 <= value <= MAX_TOKEN_COUNT


def bad_usage(usage: Mapping[str, Any]) -> str | None:
    """Why one model call's usage metadata cannot be counted (a ``*_token_count`` /
    ``*TokenCount`` that is not an integer in [0, 2^53]), or None."""
    for key, value in usage.items():
        if isinstance(key, str) and (key.endswith("_token_count") or key.endswith("TokenCount")) \
                and _bad_count(value):
            shown = repr(value) if len(repr(value)) <= 24 else repr(value)[:21] + "..."
            return f"{key[:40]} is {shown}, not a token count (an integer from 0 to 2^53)"
    return None


def drop_bad_usage(invocations: Iterable[Any]) -> str | None:
    """Checks every usage count an agent reported in a run's invocations: when one is not an
    integer in [0, 2^53], the run's usage is dropped (every event's ``usage_metadata``, so
    neither the token metrics nor the budgets nor the cost count any of it) and the reason
    is returned. The agent's numbers are outside input: a huge or infinite count must not
    crash the checker or spend a budget."""
    from .evalset import InvocationEvents

    events = [event for invocation in invocations
              if isinstance(invocation.intermediate_data, InvocationEvents)
              for event in invocation.intermediate_data.invocation_events]
    why = next((w for e in events if e.usage_metadata and (w := bad_usage(e.usage_metadata))), None)
    if why is not None:
        for event in events:
            event.usage_metadata = None
    return why


def usage_left_out(run: Any) -> str | None:
    """``drop_bad_usage`` on a recorded run: the warning to print (naming the run, its
    untrusted parts as they are: the caller cleans them), or None."""
    why = drop_bad_usage(run.invocations)
    if why is None:
        return None
    from .setkey import shown

    return f"{shown(run.key)}/{run.eval_id} run {run.run}: the agent's token usage was left out: {why}"


def _count(usage: Mapping[str, Any], snake: str) -> int | None:
    parts = snake.split("_")
    value = usage.get(snake, usage.get(parts[0] + "".join(p.title() for p in parts[1:])))
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return int(value)
    return None


def usage_counts(usage: Mapping[str, Any]) -> tuple[int, int] | None:
    """(input, output) of one model call's usage metadata (snake_case or camelCase keys);
    None when it reports neither."""
    prompt, tool = _count(usage, "prompt_token_count"), _count(usage, "tool_use_prompt_token_count")
    candidates, thoughts = _count(usage, "candidates_token_count"), _count(usage, "thoughts_token_count")
    if prompt is None and tool is None and candidates is None and thoughts is None:
        return None
    return (prompt or 0) + (tool or 0), (candidates or 0) + (thoughts or 0)


def agent_tokens(invocations: Iterable[Any]) -> Tokens | None:
    """What the agent reported for a run: every model call's usage metadata in its
    invocations' events (the stdio protocol's ``usage``, ADK events' ``usage_metadata``),
    by the events' ``model_version``; None when no call reported any count."""
    from .evalset import InvocationEvents

    tokens: Tokens | None = None
    for invocation in invocations:
        data = invocation.intermediate_data
        if not isinstance(data, InvocationEvents):
            continue
        for event in data.invocation_events:
            counts = usage_counts(event.usage_metadata) if event.usage_metadata else None
            if counts is not None:
                tokens = tokens or Tokens()
                tokens.add(*counts, model=event.model_version)
    return tokens


class TokenBudget:
    """A budget of tokens (--max-agent-tokens, --max-judge-tokens): spent once the tokens
    counted reach ``limit``; after that no further run or judge call starts. What was left
    out is counted here, for the report and the exit status."""

    def __init__(self, option: str, limit: int, what: str):
        self.option, self.limit, self.what = option, limit, what
        self.used = 0
        self.refused = 0  # runs or judge calls not started
        self.cases: set[tuple[str, str]] = set()  # (eval set key, eval id) left incomplete
        self.skipped: list[tuple[str, str, int]] = []  # runs not started: (set key, eval id, run)

    def charge(self, tokens: int) -> None:
        self.used += tokens

    def spent(self) -> bool:
        return self.used >= self.limit

    def message(self) -> str:
        return (f"the {self.what} token budget ({self.option} {self.limit:,}) is spent: "
                f"{self.used:,} tokens used")

    def as_json(self) -> dict[str, Any]:
        return {"side": self.what, "option": self.option, "limit": self.limit, "used": self.used,
                "what": "run" if self.what == "agent" else "judge call",
                "refused": self.refused, "cases": len(self.cases)}
