"""Majority vote over judge samples, robust to failed samples.

Each sample votes for (valid / yes / supported), against, or failed (no answer after retries,
or an answer that could not be read). As in ADK a tie counts against. Unlike ADK, a failed
sample does not void the item on its own: the verdict stands when the failed samples could
not have changed it whatever they had said, i.e. ``for > against + failed`` gives *for* and
``for + failed <= against`` gives *against*. Otherwise the item is undecided and the metric
is an ``error`` for that case (never a pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Vote:
    votes_for: int
    votes_against: int
    failed: int

    @property
    def total(self) -> int:
        return self.votes_for + self.votes_against + self.failed

    @property
    def decision(self) -> bool | None:
        if self.votes_for > self.votes_against + self.failed:
            return True
        if self.votes_for + self.failed <= self.votes_against:
            return False
        return None

    @property
    def agreement(self) -> str:
        """Share of samples behind the verdict, e.g. ``4/5``."""
        decision = self.decision
        if decision is None:
            return (f"undecided: {self.votes_for} for, {self.votes_against} against, "
                    f"{self.failed} failed")
        return f"{self.votes_for if decision else self.votes_against}/{self.total}"

    def to_json(self) -> dict[str, int]:
        return {"for": self.votes_for, "against": self.votes_against, "failed": self.failed}


def majority(samples: Sequence[bool | None]) -> Vote:
    """``samples``: True for, False against, None failed."""
    return Vote(votes_for=sum(s is True for s in samples),
                votes_against=sum(s is False for s in samples),
                failed=sum(s is None for s in samples))
