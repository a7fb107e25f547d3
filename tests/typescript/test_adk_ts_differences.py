"""docs/adk-typescript.md's table of why scores differ from @iqai/adk's own AgentEvaluator:
each row computed on both sides, evalcheck's with its own code and ADK-TS's with the real
@iqai/adk 0.5.9 evaluators (through node), and found in the page as written. (The rows on how
the agent is run are held by test_iqai_adk.py and test_adapter_loading.py; the judges' by
tests/judges/test_adk_ts_judged.py.)"""

from __future__ import annotations

import json
import subprocess

import pytest

from checker.inputs.discover import discover
from checker.metrics.response_match_score import rouge1
from checker.metrics.tool_trajectory_avg_score import MatchType, trajectory_matches
from checker.models.evalset import FunctionCall
from tshelpers import HERE, REPO, evalcheck, require_packages

DOCS = (REPO / "docs" / "adk-typescript.md").read_text(encoding="utf-8")

# (response, reference, @iqai/adk's score, evalcheck's score), as the table shows them.
ROUGE = [
    ("the the the cat", "the cat", "1.0", "0.667"),
    ("The cities were raining", "the city was rained", "0.25", "0.75"),
    ("call get_weather now", "call get weather now", "0.571", "1.0"),
    ("The caf is open", "The café is open", "1.0", "0.75"),
    ("東京は晴れです", "東京は晴れです", "0.0", "1.0"),
]
# (actual call, expected call, how the table writes them, @iqai/adk's, evalcheck's)
TRAJECTORY = [
    ({"name": "f", "args": {"w": {"a": 1, "b": 2}}}, {"name": "f", "args": {"w": {"b": 2, "a": 1}}},
     '`f(w={"a": 1, "b": 2})` against `f(w={"b": 2, "a": 1})`', "0.0", "1.0"),
    ({"name": "f", "args": {"on": True}}, {"name": "f", "args": {"on": 1}},
     "`f(on=true)` against `f(on=1)`", "0.0", "1.0"),
]


def shown(score) -> str:
    """A score as the table writes it: up to 3 decimals, at least one."""
    text = f"{score:.3f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def adk_ts_scores(asked: dict, env: dict | None = None) -> dict:
    require_packages()
    done = subprocess.run(["node", str(HERE / "tools" / "adk_ts_scores.mjs")], input=json.dumps(asked),
                          cwd=HERE, capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def adk_ts() -> dict:
    return adk_ts_scores({"rouge": [[r, ref] for r, ref, *_ in ROUGE],
                          "trajectory": [[[a], [e]] for a, e, *_ in TRAJECTORY]
                          + [[[], [{"name": "get_weather", "args": {"city": "Paris"}}]]]})


@pytest.mark.parametrize("i", range(len(ROUGE)))
def test_response_match_rows(adk_ts, i):
    response, reference, theirs, ours = ROUGE[i]
    assert shown(rouge1(response, reference).fmeasure) == ours
    assert shown(adk_ts["rouge"][i]) == theirs
    assert (f"| `response_match_score` | `{response}` against `{reference}` | {theirs} | {ours} |"
            in DOCS)


@pytest.mark.parametrize("i", range(len(TRAJECTORY)))
def test_tool_trajectory_rows(adk_ts, i):
    actual, expected, written, theirs, ours = TRAJECTORY[i]
    matched = trajectory_matches([FunctionCall.model_validate(actual)], [FunctionCall.model_validate(expected)],
                                 MatchType.EXACT, ignore_args=False)
    assert shown(float(matched)) == ours
    assert shown(adk_ts["trajectory"][i]) == theirs
    assert f"| `tool_trajectory_avg_score` | {written} | {theirs} | {ours} |" in DOCS


def test_tool_calls_it_never_records_score_zero(adk_ts):
    """ADK-TS's inference records no tool use: an expected call then scores 0 (evalcheck
    reads the calls from the events: the example's score 1.0, test_iqai_adk.py)."""
    assert adk_ts["trajectory"][len(TRAJECTORY)] == 0
    assert "never recorded (`toolUses: []`): any expected tool call scores" in DOCS


def test_its_judged_metrics_are_nan_and_random():
    """ADK-TS's final_response_match_v2 is NaN; its Vertex AI metrics are random numbers in
    [0.5, 1) once a project and location are set (an error without them)."""
    asked = {"finalResponseMatchV2": [["Sunny", "Sunny"]], "safety": ["Sunny", "Sunny", "Sunny"]}
    env = {"PATH": "/usr/bin:/bin", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"}
    with_vertex = adk_ts_scores(asked, env)
    assert with_vertex["finalResponseMatchV2"] == ["NaN"]
    safety = with_vertex["safety"]
    assert all(0.5 <= s < 1 for s in safety) and len(set(safety)) == 3
    assert adk_ts_scores(asked, {"PATH": "/usr/bin:/bin"})["safety"] == [None, None, None]
    assert "| `Math.random() * 0.5 + 0.5` when `GOOGLE_CLOUD_PROJECT`" in DOCS
    assert "| `NaN`: its judge calls a method its model classes do not have" in DOCS


def test_files_rows(tmp_path):
    """evalcheck reads *.evalset.json too and skips node_modules; a missing test_config.json
    is said, a broken one stops the run naming it; one in a parent folder is read."""
    from test_adk_ts_files import DOCS_EXAMPLE

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.test.json").write_text(json.dumps(DOCS_EXAMPLE))
    (tmp_path / "a" / "y.evalset.json").write_text(json.dumps({**DOCS_EXAMPLE, "evalSetId": "y"}))
    (tmp_path / "node_modules" / "pkg").mkdir(parents=True)
    (tmp_path / "node_modules" / "pkg" / "z.test.json").write_text(json.dumps({**DOCS_EXAMPLE, "evalSetId": "z"}))
    discovery = discover([str(tmp_path)], root=tmp_path)
    targets, notes = discovery.targets, discovery.notes
    assert sorted(t.eval_set_id for t in targets) == ["search-agent-v1", "y"]
    assert any(n.startswith("no test_config.json beside ") for n in notes)
    assert "| `test_config.json` missing | ADK's defaults, silently | ADK's defaults, with a note" in DOCS
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.5}}))
    targets = discover([str(tmp_path / "a")], root=tmp_path).targets
    assert {m.name for t in targets for m in t.config.metrics if not m.informational} == {"response_match_score"}
    (tmp_path / "a" / "test_config.json").write_text('{"criteria": {"response_match_score": 0.8,}}')
    done = evalcheck("run", str(tmp_path / "a"), "--replay", str(tmp_path / "none.json"), cwd=tmp_path)
    assert done.returncode == 2
    assert "a/test_config.json:1: invalid JSON" in done.stderr
    assert "| `test_config.json` broken (bad JSON, no `criteria`) | ADK's defaults, silently | stops with exit 2" in DOCS
