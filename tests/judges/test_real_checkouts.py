"""Real repositories as they are (issue 23): unchanged copies of the eval files of Google's
adk-samples (two layouts) and of agent-starter-pack's templates, in their folders
(tests/data/real/*/SOURCE.md), run whole with ``evalcheck run .`` and a scripted stdio agent,
the rubric judges answered by the fake Gemini server. Each file is also loaded with
google-adk 2.13's own loaders, side by side: what ADK loads is evaluated, and what evalcheck
refuses is refused for a reason that would change the result."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .fake_gemini import rubric_verdicts
from .test_end_to_end import RUBRIC

DATA = Path(__file__).parent.parent / "data" / "real"
DEFAULT = ["response_match_score", "tool_trajectory_avg_score"]  # ADK's default criteria
RUBRICS = ["rubric_based_final_response_quality_v1"]
LH = "core/python/long-horizon-harness/tests/eval"
SUW = "contrib/python/staged-ui-widgets/tests/eval"
ASP = "agent_starter_pack/agents/{}/tests/eval/evalsets/basic.evalset.json"

# checkout -> eval file -> (criteria file applied, or None for ADK's defaults; metrics; cases)
EVALUATED = {
    "adk-samples-checkout": {
        "contrib/python/crypto-payroll-agent/eval/crypto_payroll_eval_set.evalset.json": (None, DEFAULT, 6),
        f"{SUW}/evalsets/basic.evalset.json": (f"{SUW}/eval_config.json", RUBRICS, 6),
        "contrib/python/travel-concierge/eval/data/inspire.test.json":
            ("contrib/python/travel-concierge/eval/data/test_config.json", DEFAULT, 1),
        f"{LH}/evalsets/basic.evalset.json": (f"{LH}/eval_config.json", RUBRICS, 2),
    },
    "adk-samples-python-agents": {
        "python/agents/academic-research/eval/data/seminal.test.json": (None, DEFAULT, 1),
        "python/agents/global-kyc-agent/eval/global_kyc.test.json":
            ("python/agents/global-kyc-agent/eval_config.json", DEFAULT, 2),
        "python/agents/on-brand-genmedia/eval/data/on_brand_genmedia.test.json":
            ("python/agents/on-brand-genmedia/eval/data/test_config.json", ["tool_trajectory_avg_score"], 3),
    },
    "agent-starter-pack": {ASP.format(t): (None, DEFAULT, 2) for t in ("adk", "adk_a2a", "agentic_rag")},
}
# checkout -> refused file -> what the error says (each would change the result if run)
REFUSED = {
    "adk-samples-checkout": {  # agents-cli's config, not an ADK file: a Vertex AI managed metric
        f"{LH}/eval_config.yaml": "at $.custom_metrics[0]: agents-cli's built-in metric "
                                  "'final_response_quality' (quality of the agent's final response"},
    "adk-samples-python-agents": {  # named *.evalset.json, but no eval cases: ADK refuses it too
        "python/agents/nexshift-agent/eval/coordinator/coordinator.evalset.json":
            "missing required key 'eval_cases'"},
    "agent-starter-pack": {},
}
# on-brand-genmedia's expected tools, called in reverse order with no arguments (its custom
# metric matches names in any order: 1.0, where ADK's built-in trajectory match gives 0.0),
# or only some of them (0.0).
GENMEDIA_TOOLS = ["search_asset_bank", "get_policy", "generate_images", "get_image", "get_policy",
                  "set_score", "check_condition_and_escalate_tool"]
AGENT = f"""import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "user":
        text = m["content"]["parts"][0]["text"]
        tools = {GENMEDIA_TOOLS[::-1]!r} if "shepherd" in text else {GENMEDIA_TOOLS[:2]!r} if "NeuroVibe" in text else []
        print(json.dumps({{"type": "response", "invocationId": m["invocationId"],
                          "finalResponse": "You asked: " + text,
                          "toolUses": [{{"name": t, "args": {{}}}} for t in tools]}}), flush=True)
"""
# eval file -> case -> (status, score) of a custom metric found in the agent's folder, not at
# the root (adk eval runs from the agent's folder: eval.custom_metrics is
# python/agents/on-brand-genmedia/eval/custom_metrics.py, a stand-in: SOURCE.md)
CUSTOM = {"python/agents/on-brand-genmedia/eval/data/on_brand_genmedia.test.json": {
    "shepherd_test": ("passed", 1.0), "neurovibe_engineer": ("failed", 0.0),
    "neurovibe_reception": ("failed", 0.0)}}


def checkout(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(DATA / name, root, ignore=shutil.ignore_patterns("SOURCE.md"))
    (root / ".git").mkdir()
    (tmp_path / "agent.py").write_text(AGENT)
    return root


def run(root: Path, fake, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_"))}
    env.update({"GOOGLE_API_KEY": "test-key", "EVALCHECK_GEMINI_BASE_URL": fake.url})
    agent = f"{sys.executable} {root.parent / 'agent.py'}"
    return subprocess.run([sys.executable, "-m", "checker.cli", "run", ".", "--agent-command", agent,
                           "--num-runs", "1", "--results", "r.json", "--markdown", "r.md", *extra],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)


def answer_rubrics(fake) -> None:
    ids = ["relevance", "helpfulness", "does_not_recite_the_widget", "claims_only_what_shipped",
           "facts_come_from_tools", "offers_a_way_forward", "greeting_conversational_reply",
           "greeting_no_tool_calls"]
    fake.on(lambda p: RUBRIC in p, rubric_verdicts({rid: True for rid in ids}))


@pytest.mark.parametrize("name", sorted(EVALUATED))
def test_a_whole_checkout_evaluates_every_eval_set_with_the_criteria_adk_would_use(tmp_path, fake, name):
    root = checkout(tmp_path, name)
    answer_rubrics(fake)
    out = run(root, fake)
    assert out.returncode == (2 if REFUSED[name] else 1), out.stdout + out.stderr
    assert "\x00" not in out.stdout + out.stderr  # an eval set shared by two files reads as id (path)
    results = json.loads((root / "r.json").read_text())
    found = {s["path"]: s for s in results["evalSets"]}
    assert sorted(found) == sorted(EVALUATED[name])
    for path, (config, metrics, cases) in EVALUATED[name].items():
        eval_set = found[path]
        assert eval_set.get("configPath") == config, path
        assert len(eval_set["cases"]) == cases, path
        for case in eval_set["cases"]:
            assert sorted(m["name"] for m in case["metrics"] if m["status"] != "informational") == metrics
        if path in CUSTOM:  # scored by the agent's own metric, none errored
            assert {c["evalId"]: (c["metrics"][0]["status"], c["metrics"][0]["score"])
                    for c in eval_set["cases"]} == CUSTOM[path], eval_set["cases"]
    assert {e["path"]: e for e in results.get("fileErrors", [])}.keys() == REFUSED[name].keys()
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("evalcheck: error: ")]
    for path, said in REFUSED[name].items():
        assert any(ln.startswith(f"evalcheck: error: {path} at $") and said in ln and "(" in ln
                   for ln in errors), errors
    if name == "agent-starter-pack":  # three templates, one id: told apart, never a collision
        assert "basic_eval (agent_starter_pack/agents/adk/tests/eval/evalsets/basic.evalset.json)" in out.stderr
    # the rubric judges were asked through the fake server, once a case and turn
    judged = sum(len(s["cases"]) for p, s in found.items() if EVALUATED[name][p][1] == RUBRICS)
    assert (len(fake.requests) > 0) == (judged > 0)


def adk_loads(path: Path) -> bool:
    """Whether google-adk 2.13 loads ``path`` as `adk eval` and AgentEvaluator do."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from google.adk.evaluation.local_eval_sets_manager import load_eval_set_from_file

    try:
        load_eval_set_from_file(str(path), path.name)
        config = AgentEvaluator.find_config_for_test_file(str(path))
        AgentEvaluator._load_eval_set_from_file(str(path), config, {})
    except Exception:
        return False
    return True


def test_every_eval_file_adk_loads_is_evaluated_and_every_refused_one_adk_refuses_too():
    from google.adk.evaluation.eval_config import get_evaluation_criteria_or_default

    for name, evaluated in EVALUATED.items():
        files = [p for p in (DATA / name).rglob("*.json")
                 if p.name.endswith((".evalset.json", "_evalset.json", ".test.json"))]
        loaded = {p.relative_to(DATA / name).as_posix() for p in files if adk_loads(p)}
        assert loaded == set(evaluated), name
        for path in REFUSED[name]:  # an ADK-format file evalcheck refuses, ADK refuses as well
            if not path.endswith(".yaml"):
                assert not adk_loads(DATA / name / path)
        for config in {c for c, _, _ in evaluated.values() if c}:
            if config.endswith(".json"):  # ADK reads each criteria file evalcheck applied
                assert get_evaluation_criteria_or_default(str(DATA / name / config)).criteria


def test_one_malformed_file_among_ten_real_ones_is_exit_2_with_a_full_report_of_the_nine(tmp_path, fake):
    root = tmp_path / "ten"
    for name, evaluated in EVALUATED.items():
        for path, (config, _, _) in evaluated.items():
            for rel in (path, config):
                if rel:
                    (root / name / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(DATA / name / rel, root / name / rel)
    (root / ".git").mkdir()
    (tmp_path / "agent.py").write_text(AGENT)
    broken = f"adk-samples-checkout/{SUW}/evalsets/basic.evalset.json"
    text = (root / broken).read_text()
    (root / broken).write_text(text.replace('"eval_id": "preference_change', '"eval_id" "preference_change'))
    answer_rubrics(fake)
    out = run(root, fake, "--junit", "j.xml")
    assert out.returncode == 2, out.stdout + out.stderr
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("evalcheck: error: ")]
    assert errors[0] == (f"evalcheck: error: {broken}:32: invalid JSON: Expecting ':' delimiter (column 17) "
                         "(correct the JSON syntax near '\"eval_id\" \"preference_change_refreshes_the_cards\",')")
    assert f"1 eval file could not be read ({broken})" in errors[-1]
    results = json.loads((root / "r.json").read_text())
    assert len(results["evalSets"]) == 9 and broken not in {s["path"] for s in results["evalSets"]}
    assert sum(len(s["cases"]) for s in results["evalSets"]) == 27 - 6  # 27 cases in the ten files, 6 in the broken one
    assert [e["path"] for e in results["fileErrors"]] == [broken]
    assert results["passed"] is False
    report = (root / "r.md").read_text().replace("\\_", "_")
    assert "could not be read" in report and broken in report
    assert (root / "j.xml").read_text().count("<testcase ") == 21
