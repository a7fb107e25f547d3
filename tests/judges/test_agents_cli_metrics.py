"""agents-cli's built-in metrics mapped onto evalcheck's, its custom_function metrics in the
custom metric worker, and every refusal (issue 23.4): the example project of test_agents_cli.py,
a scripted agent, the fake Gemini server and the fake Vertex AI service."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .fake_gemini import json_reply, labels, sentences, verdict
from .test_agents_cli import evalcheck, project  # noqa: F401 - the fixture

sys.path.insert(0, str(Path(__file__).parent.parent / "vertex"))
from fake_vertex import FakeVertex, _get  # noqa: E402

CONFIG = "tests/eval/eval_config.yaml"
DATASET = "tests/eval/datasets/basic-dataset.json"
MATCH = '"reference_response"'  # in final_response_match_v2's prompt
SEGMENT = "Split the text of an AI agent's response into sentences"
LABEL = "You check whether each sentence"


@pytest.fixture
def vertex(monkeypatch):
    server = FakeVertex().start()
    yield server
    server.stop()


def write(project: Path, config: str, cases: list[dict] | None = None) -> None:
    (project / CONFIG).write_text(config, encoding="utf-8")
    if cases is not None:
        (project / DATASET).write_text(json.dumps({"eval_cases": cases}, ensure_ascii=False), encoding="utf-8")


def text(role: str, value: str) -> dict:
    return {"role": role, "parts": [{"text": value}]}


def reference(value: str) -> dict:
    return {"response": text("model", value)}


def run(project: Path, fake, vertex: FakeVertex | None, *args: str):
    env = {"GOOGLE_VERTEX_BASE_URL": vertex.url, "GOOGLE_API_KEY": vertex.api_key} if vertex else {}
    return evalcheck(project, fake, *args, extra_env=env)


MAPPED = """metrics_to_run:
  - safety
  - multi_turn_task_success
  - final_response_match
  - rouge_1
  - hallucination_v1
"""


def test_mapped_builtin_metrics_score_as_evalcheck_metrics(project, fake, vertex):
    # The agent answers "上聯：... (case)" with a count_chars tool call (test_agents_cli.AGENT).
    answer = "上聯：春風送暖千家樂 下聯：福氣臨門萬事興 ({})"
    write(project, MAPPED, [
        {"eval_case_id": "one_turn", "prompt": text("user", "寫一副春聯"),
         "reference": reference(answer.format("one_turn"))},
        {"eval_case_id": "two_turns", "reference": reference("完全不同的答案"), "agent_data": {"turns": [
            {"turn_index": 0, "events": [{"author": "user", "content": text("user", "寫一副春聯")},
                                         {"author": "couplet_agent", "content": text("model", "old")}]},
            {"turn_index": 1, "events": [{"author": "user", "content": text("user", "再寫一副")}]}]}}])
    fake.on(lambda p: MATCH in p and "(one_turn)" in p, verdict(True, "same couplet"))
    fake.on(lambda p: MATCH in p, verdict(False, "different"))
    fake.on(lambda p: SEGMENT in p, sentences(["上聯：春風送暖千家樂 下聯：福氣臨門萬事興"]))
    fake.on(lambda p: LABEL in p, labels(["supported"]))
    out = run(project, fake, vertex, "--threshold", "safety=1", "--threshold", "multi_turn_task_success=0.5",
              "--threshold", "final_response_match=1", "--threshold", "rouge_1=0.5",
              "--threshold", "hallucination_v1=0.5")
    assert out.returncode == 1, out.stdout + out.stderr
    cases = {c["evalId"]: c for c in json.loads((project / "r.json").read_text())["evalSets"][0]["cases"]}
    one = {m["name"]: (m["score"], m["status"]) for m in cases["one_turn"]["metrics"]}
    assert one == {"safety": (1.0, "passed"), "multi_turn_task_success": (1.0, "passed"),
                   "final_response_match": (1.0, "passed"), "rouge_1": (1.0, "passed"),
                   "hallucination_v1": (1.0, "passed")}
    two = {m["name"]: (m["score"], m["status"]) for m in cases["two_turns"]["metrics"]}
    assert two["final_response_match"] == (0.0, "failed") and two["rouge_1"] == (0.0, "failed")
    # Vertex AI's own metrics, as agents-cli asks for them: safety on the final response only
    # (one request per case, not one per turn), the multi-turn one on the whole conversation.
    specs = [_get(_get(r.body["metrics"][0], "predefined_metric_spec"), "metric_spec_name") for r in vertex.requests]
    assert sorted(specs) == ["multi_turn_task_success_v1"] * 2 + ["safety_v1"] * 2
    turns = sorted(len(_get(r.body["instance"], "agent_eval_data")["turns"])
                   for r, spec in zip(vertex.requests, specs) if spec == "multi_turn_task_success_v1")
    assert turns == [1, 2]  # each case's whole conversation
    [judged] = {r.prompt for r in fake.requests if MATCH in r.prompt and "(two_turns)" in r.prompt}  # 5 samples
    assert '"user_prompt": "再寫一副"' in judged and '"reference_response": "完全不同的答案"' in judged  # the last turn


FUNCTION_FILE = '''"""A real agents-cli custom_function file: is the couplet for this case?"""
import json
import sys


def evaluate(instance):
    text = "".join(p.get("text", "") for p in instance["response"]["parts"])
    if instance["eval_case_id"] == "yan_zu_ge_5_char":
        raise ValueError("cannot count this one")
    calls = [part["function_call"]["name"] for turn in instance["agent_data"]["turns"]
             for event in turn["events"] for part in event["content"]["parts"] if "function_call" in part]
    seen = {"prompt": instance["prompt"]["parts"][0]["text"][:6], "calls": calls,
            "context": instance.get("context"), "process": sys.modules["__main__"].__spec__.name}
    return {"score": 0.0 if "company" in text else 1.0, "explanation": json.dumps(seen, ensure_ascii=False)}
'''
FUNCTIONS = """metrics_to_run:
  - couplet_for_case
  - turn_count
custom_metrics:
  - name: couplet_for_case
    custom_function_file: metrics/couplet_for_case.py
  - name: turn_count
    custom_function: |
      def evaluate(instance):
          return len(instance["agent_data"]["turns"])
"""


def test_custom_functions_run_in_the_metric_worker_as_agents_cli_calls_them(project, fake):
    (project / "tests/eval/metrics").mkdir()
    (project / "tests/eval/metrics/couplet_for_case.py").write_text(FUNCTION_FILE, encoding="utf-8")
    write(project, FUNCTIONS)
    data = json.loads((project / DATASET).read_text(encoding="utf-8"))
    data["eval_cases"][0]["context"] = "春節"
    (project / DATASET).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    out = evalcheck(project, fake, "--threshold", "couplet_for_case=1")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "metric 'turn_count' has no threshold (agents-cli has none): informational" in out.stderr
    cases = {c["evalId"]: c for c in json.loads((project / "r.json").read_text())["evalSets"][0]["cases"]}
    first = {m["name"]: m for m in cases["spring_festival_7_char"]["metrics"]}
    seen = json.loads(first["couplet_for_case"]["details"]["explanation"])
    assert seen == {"prompt": "請幫我寫一副", "calls": ["count_chars"], "context": "春節",
                    "process": "checker.scoring.custom_metric_child"}  # never the checker's process
    assert (first["couplet_for_case"]["status"], first["turn_count"]["score"],
            first["turn_count"]["status"]) == ("passed", 1.0, "informational")
    assert cases["company_opening_5_char"]["status"] == "failed"
    assert cases["yan_zu_ge_5_char"]["status"] == "error"
    assert ("custom_function 'couplet_for_case' raised ValueError: cannot count this one"
            in cases["yan_zu_ge_5_char"]["metrics"][0]["error"])
    assert fake.requests == []


def test_a_custom_function_that_returns_no_score_is_an_error(project, fake):
    write(project, 'metrics_to_run: [m]\ncustom_metrics:\n  - name: m\n    custom_function: |\n'
                   '      def evaluate(instance):\n          return {"explanation": "forgot"}\n')
    out = evalcheck(project, fake, "--threshold", "m=1")
    assert out.returncode == 1
    case = json.loads((project / "r.json").read_text())["evalSets"][0]["cases"][0]
    assert case["status"] == "error"
    assert "custom_function 'm' returned dict; return {'score': number} or a number" in case["metrics"][0]["error"]


BASE = "metrics_to_run:\n  - couplet_constraint_compliance\n"
FN = "  - name: m\n    custom_function: |\n      def evaluate(instance):\n          return 1\n"


@pytest.mark.parametrize("config, args, message", [
    (BASE + "  - final_response_quality\n", [],
     "at $.metrics_to_run[1]: agents-cli's built-in metric 'final_response_quality' (quality of the "
     "agent's final response"),
    (BASE + "  - exact_match\n", [], "agents-cli's built-in metric 'exact_match' (exact string match of "
     "response and reference (Vertex AI)) has no evalcheck equivalent (write it as a custom_metrics "
     "entry with a prompt_template (an LLM judge) or a custom_function, or remove it from metrics_to_run"),
    (BASE + "  - safety_v3\n", [], "at $.metrics_to_run[1]: agents-cli's built-in metric 'safety_v3' is "
     "a version evalcheck has no metric for (it maps safety_v1)"),
    (BASE + "  - rouge_l_sum\n", [], "'rouge_l_sum' (a ROUGE variant computed by Vertex AI) has no "
     "evalcheck equivalent; evalcheck maps rouge_1 only"),
    (BASE + "  - tool_use_quality\n", [], "evalcheck's rubric_based_tool_use_quality_v1 needs rubrics you write"),
    (BASE + "  - couplet_beauty\n", [], "at $.metrics_to_run[1]: metric 'couplet_beauty' is neither a "
     "custom_metrics entry nor one of agents-cli's built-in metrics"),
    (BASE + "  - safety\n", ["--threshold", "safety=4"], "at $.metrics_to_run[1]: --threshold safety=4 "
     "is outside the range of its scores (0 to 1: evalcheck's safety_v1)"),
    (BASE + "  - safety\ncustom_metrics:\n  - name: safety\n", [],
     "at $.custom_metrics[0]: metric 'safety': agents-cli resolves a custom_metrics entry that only "
     "names a built-in metric to its newest version, safety_v3, which evalcheck has no metric for"),
    (BASE + "  - safety\ncustom_metrics:\n  - name: safety\n    judge_model: gemini-2.5-pro\n", [],
     "at $.custom_metrics[0]: metric 'safety': this entry sets parameters of agents-cli's built-in "
     "metric (judge_model), which evalcheck does not apply"),
    (BASE + "  - m\ncustom_metrics:\n  - name: m\n    judge_model: x\n", [],
     "at $.custom_metrics[0]: metric 'm' needs a prompt_template or a custom_function"),
    (BASE + "  - safety_v1\ncustom_metrics:\n  - name: safety_v1\n    prompt_template: '{response}'\n", [],
     "at $.custom_metrics[0].name: metric 'safety_v1': that name is reserved by Vertex AI's eval service"),
    (BASE + "  - m\ncustom_metrics:\n  - name: m\n    rubric_group_name: g\n    prompt_template: x\n", [],
     "at $.custom_metrics[0].rubric_group_name: metric 'm': rubric_group_name is not supported"),
    (BASE + "  - m\ncustom_metrics:\n  - name: m\n    prompt_template: ''\n", [],
     "at $.custom_metrics[0].prompt_template: metric 'm': prompt_template must be a non-empty string"),
    (BASE + "  - m\ncustom_metrics:\n  - name: m\n    remote_custom_function: x\n", [],
     "at $.custom_metrics[0].remote_custom_function: metric 'm' runs in Vertex AI's code execution sandbox"),
    (BASE + "  - m\ncustom_metrics:\n" + FN + "    execution: elsewhere\n", [],
     "at $.custom_metrics[0].execution: metric 'm': execution must be 'local' or 'remote', got 'elsewhere'"),
    (BASE + "  - m\ncustom_metrics:\n" + FN + "    custom_function_file: f.py\n", [],
     "at $.custom_metrics[0].custom_function_file: metric 'm' gives both custom_function and custom_function_file"),
    (BASE + "  - m\ncustom_metrics:\n  - name: m\n    custom_function_file: metrics/none.py\n", [],
     "at $.custom_metrics[0].custom_function_file: custom_function_file not found: metrics/none.py"),
    (BASE + "  - m\ncustom_metrics:\n  - name: m\n    custom_function: 'def evaluate(i) return 1'\n", [],
     "at $.custom_metrics[0].custom_function: metric 'm': the custom_function is not valid Python (line 1:"),
    (BASE + "  - m\ncustom_metrics:\n  - name: m\n    custom_function: 'def score(i): return 1'\n", [],
     "at $.custom_metrics[0].custom_function: metric 'm': the custom_function defines no evaluate(instance)"),
    (BASE + "  - m\ncustom_metrics:\n  - name: m\n    prompt_template: x\n  - name: m\n    prompt_template: y\n",
     [], "at $.custom_metrics[1].name: two custom_metrics entries are named 'm' (entries 0 and 1)"),
    (BASE + "  - m\ncustom_metrics:\n  - strict_metric\n", [],
     "at $.custom_metrics[0]: a custom_metrics entry is a mapping with a name"),
    (BASE + "  - m\ncustom_metrics:\n  - prompt_template: x\n", [],
     "at $.custom_metrics[0].name: a custom_metrics entry needs a name"),
    (BASE + "  - final_response_match\n", [], "tests/eval/datasets/basic-dataset.json:4 at $.eval_cases[0]: "
     "case 'spring_festival_7_char' has no reference, which metric 'final_response_match' compares"),
])
def test_refused_metrics_are_exit_2_naming_file_path_and_fix(project, fake, config, args, message):
    original = (project / CONFIG).read_text(encoding="utf-8")
    write(project, config + ("" if "custom_metrics:" in config else "custom_metrics:\n")
          + original.split("custom_metrics:\n", 1)[1])
    out = evalcheck(project, fake, *args)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert fake.requests == []
