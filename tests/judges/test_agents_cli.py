"""agents-cli datasets end to end (issue 23.4): the public example dataset and eval_config.yaml
(tests/data/real/agents-cli-eval-example, copied unchanged), a scripted stdio agent, its
custom metrics judged through the fake Gemini server with the prompts filled as agents-cli
fills them, thresholds from --threshold, and an errored case that stays an error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .fake_gemini import Reply, json_reply

DATA = Path(__file__).parent.parent / "data" / "real" / "agents-cli-eval-example"
COMPLIANCE = "嚴謹的傳統文學與對聯體格評審"  # in couplet_constraint_compliance's template
ARTISTIC = "精通平仄對仗與詩詞美學"  # in couplet_artistic_quality's

AGENT = '''
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] != "user":
        continue
    case = os.environ["EVALCHECK_EVAL_ID"]
    print(json.dumps({"type": "response", "invocationId": msg["invocationId"],
                      "finalResponse": "上聯：春風送暖千家樂 下聯：福氣臨門萬事興 (" + case + ")",
                      "toolUses": [{"name": "count_chars", "args": {"case": case}}]}), flush=True)
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    shutil.copytree(DATA / "tests", tmp_path / "tests")
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    return tmp_path


def evalcheck(project: Path, fake, *args: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "EVALCHECK_"))}
    env.update({"GOOGLE_API_KEY": "test-key", "EVALCHECK_GEMINI_BASE_URL": fake.url, **(extra_env or {})})
    return subprocess.run([sys.executable, "-m", "checker.cli", "run", ".", "--agent-command",
                           f"{sys.executable} agent.py", "--num-runs", "1", "--results", "r.json",
                           *args], cwd=project, env=env, capture_output=True, text=True, timeout=120)


def judged(score: int, why: str = "檢查完畢") -> Reply:
    return json_reply({"score": score, "explanation": why})


def test_the_example_dataset_runs_end_to_end_with_thresholds(project, fake):
    fake.on(lambda p: COMPLIANCE in p and "(company_opening_5_char)" in p, judged(2, "字數不符"))
    fake.on(lambda p: COMPLIANCE in p, judged(4))
    fake.on(lambda p: ARTISTIC in p and "(yan_zu_ge_5_char)" in p, Reply(body=b"{}"))  # never readable
    fake.on(lambda p: ARTISTIC in p, judged(5))
    out = evalcheck(project, fake, "--threshold", "couplet_constraint_compliance=4",
                    "--threshold", "couplet_artistic_quality=3")
    assert out.returncode == 1, out.stdout + out.stderr
    results = json.loads((project / "r.json").read_text())
    [eval_set] = results["evalSets"]
    assert (eval_set["evalSetId"], eval_set["path"], eval_set["configPath"]) == (
        "basic-dataset", "tests/eval/datasets/basic-dataset.json", "tests/eval/eval_config.yaml")
    status = {c["evalId"]: c["status"] for c in eval_set["cases"]}
    assert len(status) == 8
    assert status.pop("company_opening_5_char") == "failed"
    assert status.pop("yan_zu_ge_5_char") == "error"  # counted, never dropped from the gate
    assert set(status.values()) == {"passed"}
    assert results["summary"] == {"evalSets": 1, "cases": 8, "passed": 6, "failed": 1, "errored": 1,
                                  "notEvaluated": 0, **{k: v for k, v in results["summary"].items()
                                                        if k not in ("evalSets", "cases", "passed", "failed",
                                                                     "errored", "notEvaluated")}}
    spring = {m["name"]: m for m in eval_set["cases"][0]["metrics"]}
    assert (spring["couplet_constraint_compliance"]["score"], spring["couplet_constraint_compliance"]["threshold"],
            spring["couplet_artistic_quality"]["score"]) == (4.0, 4.0, 5.0)
    assert eval_set["cases"][0]["line"] == 4  # the line of its eval_case_id

    # the prompts, filled as agents-cli fills the template (other braces left as written)
    prompts = [r.prompt for r in fake.requests if COMPLIANCE in r.prompt and "(spring_festival_7_char)" in r.prompt]
    assert len(prompts) == 1
    template = [m for m in __import__("yaml").safe_load(
        (DATA / "tests/eval/eval_config.yaml").read_text(encoding="utf-8"))["custom_metrics"]
        if m["name"] == "couplet_constraint_compliance"][0]["prompt_template"]
    head, tail = template.split("出題題目：{prompt}")
    user = json.loads((DATA / "tests/eval/datasets/basic-dataset.json").read_text(encoding="utf-8"))[
        "eval_cases"][0]["prompt"]["parts"][0]["text"]
    response = "上聯：春風送暖千家樂 下聯：福氣臨門萬事興 (spring_festival_7_char)"
    assert prompts[0].startswith(head + f"出題題目：{user}\n機器人生成內容：{response}\n完整軌跡紀錄：")
    assert prompts[0].endswith('{\n  "score": <1至5的整數>,\n  "explanation": "<繁體中文詳細說明各項格律規範檢查結果>"\n}\n')
    trajectory = prompts[0].split("完整軌跡紀錄：", 1)[1].split("\n", 1)[0]
    turns = json.loads(trajectory)["turns"]
    assert [e["author"] for e in turns[0]["events"]] == ["user", "agent", "agent"]
    assert turns[0]["events"][1]["content"]["parts"][0]["function_call"]["name"] == "count_chars"


def test_without_a_threshold_a_metric_is_informational_and_says_so(project, fake):
    fake.on(lambda p: COMPLIANCE in p, judged(4))
    fake.on(lambda p: ARTISTIC in p, judged(2))
    out = evalcheck(project, fake, "--threshold", "couplet_constraint_compliance=4")
    assert out.returncode == 0, out.stdout + out.stderr  # the artistic score of 2 gates nothing
    assert ("evalcheck: warning: tests/eval/eval_config.yaml: metric 'couplet_artistic_quality' has no "
            "threshold (agents-cli has none): informational, it gates nothing; give --threshold "
            "couplet_artistic_quality=VALUE to gate on it") in out.stderr
    results = json.loads((project / "r.json").read_text())
    artistic = [m for m in results["evalSets"][0]["cases"][0]["metrics"] if m["name"] == "couplet_artistic_quality"][0]
    assert (artistic["status"], artistic["score"], artistic["threshold"]) == ("informational", 2.0, None)


def test_an_informational_metric_that_errors_is_an_error(project, fake):
    fake.on(lambda p: COMPLIANCE in p, judged(4))
    fake.on(lambda p: ARTISTIC in p and "(he_ding_ge_7_char)" in p, Reply(body=b"{}"))
    fake.on(lambda p: ARTISTIC in p, judged(5))
    out = evalcheck(project, fake, "--threshold", "couplet_constraint_compliance=4")
    assert out.returncode == 1, out.stdout + out.stderr
    cases = {c["evalId"]: c for c in json.loads((project / "r.json").read_text())["evalSets"][0]["cases"]}
    assert cases["he_ding_ge_7_char"]["status"] == "error"
    assert [m["status"] for m in cases["he_ding_ge_7_char"]["metrics"]] == ["passed", "error"]


@pytest.mark.parametrize("edit, message", [
    (lambda c: c.replace("  - couplet_artistic_quality\n", "  - couplet_artistic_quality\n  - final_response_quality\n"),
     "tests/eval/eval_config.yaml at $.metrics_to_run[2]: agents-cli's built-in metric 'final_response_quality' (quality of the agent's final response"),
    (lambda c: c.replace("出題題目：{prompt}\n      機器人生成內容：{response}\n\n", "出題題目：{prompt} {history}\n\n"),
     "tests/eval/eval_config.yaml at $.custom_metrics[1].prompt_template: the prompt_template uses {history}, which evalcheck cannot fill"),
    (lambda c: c.replace("  - name: couplet_artistic_quality\n    prompt_template: |", "  - name: couplet_artistic_quality\n    execution: remote\n    custom_function: |\n      def evaluate(i): return 1\n    unused: |"),
     "tests/eval/eval_config.yaml at $.custom_metrics[1].execution: metric 'couplet_artistic_quality' runs in Vertex AI's code execution sandbox"),
])
def test_bad_config_is_exit_2_naming_file_path_and_fix(project, fake, edit, message):
    config = project / "tests/eval/eval_config.yaml"
    config.write_text(edit(config.read_text(encoding="utf-8")), encoding="utf-8")
    out = evalcheck(project, fake)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr
    assert fake.requests == []


@pytest.mark.parametrize("args, message", [
    (["--threshold", "couplet_quality=4"], "--threshold couplet_quality: no metric of that name in the agents-cli datasets selected (their metrics: couplet_artistic_quality, couplet_constraint_compliance)"),
    (["--threshold", "couplet_artistic_quality"], "give NAME=VALUE"),
    (["--threshold", "couplet_artistic_quality=nan"], "give NAME=VALUE"),
])
def test_bad_thresholds_are_exit_2(project, fake, args, message):
    out = evalcheck(project, fake, *args)
    assert out.returncode == 2 and message in out.stderr, out.stderr


def test_a_case_with_nothing_to_run_names_its_json_path(project, fake):
    dataset = project / "tests/eval/datasets/basic-dataset.json"
    data = json.loads(dataset.read_text(encoding="utf-8"))
    data["eval_cases"][2].pop("prompt")
    dataset.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    out = evalcheck(project, fake)
    assert out.returncode == 2
    assert ("tests/eval/datasets/basic-dataset.json at $.eval_cases[2]: the case has neither a prompt "
            "nor agent_data turns") in out.stderr


def test_agent_data_user_turns_are_what_the_agent_is_run_on(project, fake):
    dataset = project / "tests/eval/datasets/basic-dataset.json"
    dataset.write_text(json.dumps({"eval_cases": [{"eval_case_id": "two_turns", "agent_data": {
        "agents": {}, "turns": [
            {"turn_index": 0, "events": [{"author": "user", "content": {"role": "user", "parts": [{"text": "寫一副春聯"}]}},
                                         {"author": "couplet_agent", "content": {"role": "model", "parts": [{"text": "old"}]}}]},
            {"turn_index": 1, "events": [{"author": "user", "content": {"role": "user", "parts": [{"text": "再寫一副"}]}}]}]}}]},
        ensure_ascii=False), encoding="utf-8")
    fake.on(lambda p: COMPLIANCE in p, judged(5))
    fake.on(lambda p: ARTISTIC in p, judged(5))
    out = evalcheck(project, fake, "--threshold", "couplet_constraint_compliance=4", "--inference-out", "runs.json")
    assert out.returncode == 0, out.stdout + out.stderr
    [run] = json.loads((project / "runs.json").read_text())["runs"]
    assert [i["userContent"]["parts"][0]["text"] for i in run["invocations"]] == ["寫一副春聯", "再寫一副"]
    [prompt] = [r.prompt for r in fake.requests if COMPLIANCE in r.prompt]
    assert "出題題目：寫一副春聯\n再寫一副\n" in prompt
