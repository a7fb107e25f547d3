"""A case's fingerprint: "sha256:" + hex digest of a canonical JSON of what was evaluated.

Included (a change to any of them makes the case ``changed`` against a baseline):
- the eval case as the checker read it (conversation or scenario, session input, rubrics,
  expected final state), without ``creation_timestamp`` (a re-export changes only that);
- every gating metric: its name, threshold and all its criterion options - which hold the
  judge model and its settings for judged metrics (informational metrics are left out: a
  newer evalcheck reporting one more of them must not make every case ``changed``);
- for a custom metric, the function it names (``code_config.name``);
- for a scenario case, the user simulator's configuration (it plays the user).

Not included: file paths, line numbers, eval set ids (the case is matched by id already),
the order of the metrics, the verdict rule and the number of runs (the comparison uses
those from the results themselves), and the code of the agent - the thing under test.
Canonical JSON: keys sorted, no whitespace, UTF-8, floats as Python's repr.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .criteria import ConfiguredMetric, EvalConfig
from ..models.evalset import EvalCase


def _criterion(configured: ConfiguredMetric) -> dict[str, Any]:
    criterion = configured.criterion
    options = criterion.model_dump(mode="json") if hasattr(criterion, "model_dump") else criterion
    return {"name": configured.name, "threshold": configured.threshold, "options": options,
            "customFunction": configured.custom_function_path}


def case_fingerprint(case: EvalCase, config: EvalConfig) -> str:
    content = case.model_dump(mode="json", exclude={"creation_timestamp"}, exclude_none=True)
    payload: dict[str, Any] = {
        "case": content,
        "criteria": sorted((_criterion(m) for m in config.gating()), key=lambda c: c["name"]),
    }
    if case.agents_cli_case is not None:  # its context, rubric_groups, ...: a custom_function reads them
        payload["agentsCliCase"] = case.agents_cli_case
    if case.conversation_scenario is not None and config.user_simulator is not None:
        payload["userSimulator"] = config.user_simulator.model_dump(mode="json")
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
