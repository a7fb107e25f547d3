"""An evalcheck metric scoring only a run's last turn, as agents-cli's built-in metrics score
a case's one final response (checker/inputs/agents_cli_metrics.py maps them)."""

from __future__ import annotations

from functools import cache
from typing import Any

from ..base import Metric, RunInput, RunScore, ScoringContext


@cache
def final_turn_metric(metric: type[Metric]) -> type[Metric]:
    """``metric`` on the last invocation (and the last expected one) of each run. Not
    registered: the subclass lives here, outside the registry's modules."""

    class FinalTurn(metric):  # type: ignore[valid-type, misc]
        async def score(self, criterion: Any, run: RunInput, context: ScoringContext) -> RunScore:
            last = RunInput(case=run.case, actual=run.actual[-1:],
                            expected=None if run.expected is None else run.expected[-1:],
                            scenario=run.scenario, run=run.run)
            result = super().score(criterion, last, context)
            return await result if hasattr(result, "__await__") else result

    FinalTurn.__name__ = FinalTurn.__qualname__ = f"FinalTurn{metric.__name__}"
    return FinalTurn
