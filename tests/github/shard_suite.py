"""A small suite for the sharded Action tests (in-process and in the container): 6 cases in
one eval file, recorded runs in which cases 1 to 3 fail; with 3 shards, equal costs go
round robin, so every shard holds one failing case."""

from __future__ import annotations

import json
from pathlib import Path

SHARDS = 3
FAILING = ("case_1", "case_2", "case_3")


def _turn(answer: str) -> dict:
    return {"invocation_id": "t1", "user_content": {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
            "final_response": {"role": "model", "parts": [{"text": answer}]}}


def suite_files() -> dict[str, str]:
    """``sharded/suite.evalset.json``, its test_config.json and ``sharded/runs.json``."""
    ids = [f"case_{n}" for n in range(1, 7)]
    cases = [{"eval_id": i, "conversation": [_turn("Sunny in Paris, 21 C.")]} for i in ids]
    runs = [{"evalSetId": "suite", "evalId": i, "run": r,
             "invocations": [_turn("It rains in Rome." if i in FAILING else "Sunny in Paris, 21 C.")]}
            for i in ids for r in (1, 2)]
    return {"sharded/suite.evalset.json": json.dumps({"eval_set_id": "suite", "eval_cases": cases}, indent=2),
            "sharded/test_config.json": json.dumps({"criteria": {"response_match_score": 0.8}}),
            "sharded/runs.json": json.dumps({"version": 1, "runs": runs})}


def shard_inputs(index: int) -> dict[str, str]:
    """A matrix job's inputs: its shard, publish: false, a results file named per shard."""
    return {"replay": "sharded/runs.json", "paths": "sharded", "shard": f"{index}/{SHARDS}",
            "publish": "false", "results": f"evalcheck-report/results-{index}.json"}


def downloaded(shard_workspaces: list[Path]) -> dict[str, str]:
    """actions/download-artifact with merge-multiple: every shard's results in one folder."""
    return {f"shards/results-{i}.json": (ws / f"evalcheck-report/results-{i}.json").read_text()
            for i, ws in enumerate(shard_workspaces, 1)}
