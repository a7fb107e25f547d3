"""The custom metric worker's own process (started by custom_metric_worker.py, as the
agent's user in the Action): reads one run a line, scores it with the metric imported from
the private copy of its sources, answers one JSON line."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..metrics.base import RunInput


def _serve(root: Path, sources: Path | None) -> int:
    from ..inputs.criteria import _CustomCriterion
    from ..models.evalset import ConversationScenario, Invocation
    from .agents_cli_function import score_function_in_process
    from .custom_metric import score_in_process

    # The protocol gets its own copy of stdout; the metric's prints (fd 1) go to stderr.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if request.get("kind") == "agents_cli_function":  # agents-cli's evaluate(instance)
                score = asyncio.run(score_function_in_process(request["source"], request["name"],
                                                              request["instance"]))
            else:
                run = RunInput(case=None, actual=[Invocation.model_validate(i) for i in request["actual"]],  # type: ignore[arg-type]
                               expected=None if request["expected"] is None else
                               [Invocation.model_validate(i) for i in request["expected"]],
                               scenario=None if request["scenario"] is None else
                               ConversationScenario.model_validate(request["scenario"]))
                criterion = _CustomCriterion.model_validate(request["criterion"])
                search = Path(request["from"]) if request.get("from") else None
                score = asyncio.run(score_in_process(request["path"], request["name"], criterion, run,
                                                     root, sources=sources, search=search))
            reply: dict[str, Any] = {"score": score.model_dump(mode="json")}
        except Exception as exc:  # a malformed request is the checker's bug: say it, go on
            reply = {"error": f"custom metric worker: {type(exc).__name__}: {exc}"}
        out.write(json.dumps(reply, default=str) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print("usage: python -m checker.scoring.custom_metric_child ROOT [SOURCES]", file=sys.stderr)
        raise SystemExit(2)
    sys.exit(_serve(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) == 3 else None))
