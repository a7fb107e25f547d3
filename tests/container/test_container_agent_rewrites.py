"""Issue 22, point 3, the agent's side: what the agent under test rewrites while it runs is
not what the verdict reads (docs/github-action.md#trust-model, rule 2).

In the real image the agent (`evalcheck-agent`, which may write the working directory while
it runs) rewrites, in one go, every input the verdict reads: the baseline file, the criteria
(the `config:` file and the eval folder's test_config.json), the eval file, the template and
the custom metric's source, each so that it would change the verdict or the report if it
were read. The same Action run with an agent that answers alike and rewrites nothing is the
reference: the results, the exit status, the outputs, the check run and the comment must be
the same. One container run per way of reaching the agent (agent-command: the rewrite
happens in the middle of the first run; agent-url: the server command's), plus its
reference run (a few seconds each, the image is built once per module).
"""

from __future__ import annotations

import json
import shutil

import pytest

from test_container_action import (HEAD, FakeGitHub, Runner, _hand_to_runner_user,  # noqa: F401
                                   docker_run, event, image, input_env)
from test_container_trust import _lay_out, _port
from runner_env import EXAMPLE, as_checkout  # noqa: E402  (on the path test_container_action set)

# What the agent writes into the working directory: every one of them, if read, changes the
# verdict (thresholds, baseline, cases, metric) or the report (template).
REWRITE = r'''
import json, pathlib

done = {}

def attempt(name, action):
    try:
        action()
        done[name] = "done"
    except Exception as exc:
        done[name] = f"{type(exc).__name__}: {exc}"

def baseline():  # main "failed" everything: nothing could have regressed
    b = pathlib.Path("baseline/results.json")
    data = json.loads(b.read_text())
    for s in data["evalSets"]:
        for c in s["cases"]:
            c["status"] = "failed"
            for m in c["metrics"]:
                if m.get("score") is not None:
                    m["score"], m["runs"] = 0.0, [0.0 for _ in m.get("runs") or []]
                    m["status"] = "failed" if m["status"] == "passed" else m["status"]
    b.write_text(json.dumps(data))

LAX = json.dumps({"criteria": {"tool_trajectory_avg_score": 0.0, "response_match_score": 0.0, "probe": 0.0},
                  "custom_metrics": {"probe": {"code_config": {"name": "evalmetrics.probe.probe"}}}})

def evalset():  # only the case that passes
    e = pathlib.Path("agent_evals/weather.evalset.json")
    data = json.loads(e.read_text())
    data["eval_cases"] = [c for c in data["eval_cases"] if c["eval_id"] != "compare_cities"]
    e.write_text(json.dumps(data))

attempt("baseline", baseline)
attempt("config", lambda: pathlib.Path("criteria/test_config.json").write_text(LAX))
attempt("criteria", lambda: pathlib.Path("agent_evals/test_config.json").write_text(LAX))
attempt("evalset", evalset)
attempt("template", lambda: pathlib.Path("report.j2").write_text("## forged: passed\n"))
attempt("metric", lambda: pathlib.Path("evalmetrics/probe.py").write_text(
    "def probe(eval_metric, actual, expected, scenario):\n    return 12345.0\n"))
pathlib.Path("rewrites.json").write_text(json.dumps(done))
'''

# Answers as the recorded runs' worst: paris_today passes, compare_cities calls one tool of
# two (its trajectory fails; main passed it). With --rewrite, the first run to start rewrites
# everything above before it answers.
AGENT = r'''
import json, os, runpy, sys

ANSWERS = {
    "paris_today": ("It is sunny in Paris today, 21 degrees Celsius.", ["Paris"]),
    "compare_cities": ("I could only find Rome: 24 degrees Celsius.", ["Rome"]),
}
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "start" and "--rewrite" in sys.argv:
        try:
            os.close(os.open("rewrite.lock", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
        except FileExistsError:
            pass
        else:
            runpy.run_path("rewrite.py")
    if msg["type"] == "user":
        text, cities = ANSWERS[os.environ["EVALCHECK_EVAL_ID"]]
        print(json.dumps({"type": "response", "invocationId": msg["invocationId"],
                          "finalResponse": {"role": "model", "parts": [{"text": text}]},
                          "toolUses": [{"name": "get_weather", "args": {"city": c}} for c in cities]}),
              flush=True)
'''

# A report that shows everything the verdict is made of (durations left out: they vary).
TEMPLATE = """## {{ 'passed' if results.passed else 'failed' }}
{% for s in results.eval_sets %}{% for c in s.cases %}
- {{ c.eval_id }} {{ c.status }} {{ c.change }} line {{ c.line }}
{%- for m in c.metrics if m.name != 'invocation_duration_v1' %}
  - {{ m.name }} {{ m.score }} / {{ m.threshold }} {{ m.status }} (main: {{ m.baseline_score }})
{%- endfor %}
{%- endfor %}{% endfor %}
"""

# agent-command: the criteria given as `config:`; agent-url: the eval folder's own
# test_config.json (which _lay_out gave the custom metric). {rewrite}: the hostile switch.
MODES = {
    "agent-command": dict(agent_command="python agent.py{rewrite}", config="criteria/test_config.json"),
    "agent-url": dict(agent_url="http://127.0.0.1:{port}", app_name="tiny",
                      agent_server_command="{rewrite}exec python tiny_api_server.py {port} server.pid"),
}
REWRITE_SWITCH = {"agent-command": " --rewrite", "agent-url": "python rewrite.py && "}

# what the results of two runs of the same evaluation may differ in: times
VARYING = {"startedAt", "finishedAt", "durationSeconds"}


def _stable(value):
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [_stable(v) for v in value
                if not (isinstance(v, dict) and v.get("name") == "invocation_duration_v1")]
    return value


def _run(image, tmp_path, mode: str, hostile: bool) -> dict:  # noqa: F811
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / ("hostile" if hostile else "reference"), event())
        _lay_out(runner)  # the custom metric `probe` (it scores its euid, 48151), agent files
        ws = runner.workspace
        (ws / "criteria").mkdir()
        criteria = json.loads((EXAMPLE / "agent_evals" / "test_config.json").read_text())
        criteria["criteria"]["probe"] = 0.0
        criteria["custom_metrics"] = {"probe": {"code_config": {"name": "evalmetrics.probe.probe"}}}
        (ws / "criteria" / "test_config.json").write_text(json.dumps(criteria))
        _baseline_with_the_metric(ws)
        (ws / "report.j2").write_text(TEMPLATE)
        (ws / "rewrite.py").write_text(REWRITE)
        (ws / "agent.py").write_text(AGENT)
        as_checkout(runner)  # a pull request that changed none of it (the baseline is tracked)
        _hand_to_runner_user(runner)
        port = _port()
        inputs = {k: v.format(port=port, rewrite=REWRITE_SWITCH[mode] if hostile else "")
                  for k, v in MODES[mode].items()}
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", num_runs="2", concurrency="2",
                           baseline="baseline/results.json", template="report.j2",
                           fail_on="regression", **inputs)}
        done = docker_run(image, runner, env)
        log = done.stdout + done.stderr
        rewrites = ws / "rewrites.json"
        (check,) = fake.check_runs.values()
        return {
            "log": log,
            "exit": done.returncode,
            "outputs": {k: v for k, v in runner.outputs().items() if k != "comment-url"},
            "results": json.loads((ws / "evalcheck-report" / "results.json").read_text()),
            "report": (ws / "evalcheck-report" / "report.md").read_text(),
            "comment": [c["body"] for c in fake.comments[7]],
            "check": (check["conclusion"], check["output"]["title"],
                      [(a["path"], a["start_line"], a["annotation_level"], a["title"])
                       for annotations in fake.annotations.values() for a in annotations]),
            "rewrites": json.loads(rewrites.read_text()) if rewrites.exists() else None,
            "workspace": ws,
        }


def _baseline_with_the_metric(ws) -> None:
    """Main's results as if main had the custom metric too (its fingerprints recomputed),
    so that the cases are compared with main's (not `changed`)."""
    from checker.inputs.fingerprint import case_fingerprint
    from checker.inputs.discover import discover

    (target,) = discover([str(ws / "agent_evals")], root=ws, config_file=ws / "criteria" / "test_config.json").targets
    fingerprints = {c.eval_id: case_fingerprint(c, target.config) for c in target.loaded.eval_set.eval_cases}
    path = ws / "baseline" / "results.json"
    data = json.loads(path.read_text())
    for case in data["evalSets"][0]["cases"]:
        case["fingerprint"] = fingerprints[case["evalId"]]
        case["metrics"].append({"name": "probe", "threshold": 0.0, "score": 48151.0, "status": "passed",
                                "runs": [48151.0, 48151.0]})
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("mode", list(MODES))
def test_the_agents_rewrites_change_nothing_the_verdict_reads(image, tmp_path, mode):  # noqa: F811
    reference = _run(image, tmp_path, mode, hostile=False)
    hostile = _run(image, tmp_path, mode, hostile=True)
    log = hostile["log"]

    # the reference: main passed compare_cities, this agent fails it (a regression)
    assert reference["rewrites"] is None
    assert reference["exit"] == 1, reference["log"][-5000:]

    # the agent did rewrite every file, as evalcheck-agent, while it ran
    assert hostile["rewrites"] == {name: "done" for name in
                                   ("baseline", "config", "criteria", "evalset", "template", "metric")}, log[-3000:]
    ws = hostile["workspace"]
    assert json.loads((ws / "baseline" / "results.json").read_text())["evalSets"][0]["cases"][0]["status"] == "failed"
    assert json.loads((ws / "criteria" / "test_config.json").read_text())["criteria"]["response_match_score"] == 0.0
    assert json.loads((ws / "agent_evals" / "test_config.json").read_text())["criteria"]["response_match_score"] == 0.0
    assert len(json.loads((ws / "agent_evals" / "weather.evalset.json").read_text())["eval_cases"]) == 1
    assert (ws / "report.j2").read_text() == "## forged: passed\n"
    assert "12345.0" in (ws / "evalmetrics" / "probe.py").read_text()

    # ... and none of it was read: each, one by one
    metrics = {(c["evalId"], m["name"]): m for s in hostile["results"]["evalSets"] for c in s["cases"]
               for m in c["metrics"]}
    cases = {c["evalId"]: c for s in hostile["results"]["evalSets"] for c in s["cases"]}
    assert set(cases) == {"paris_today", "compare_cities"}  # the eval file as it was
    trajectory = metrics[("compare_cities", "tool_trajectory_avg_score")]
    assert trajectory["threshold"] == 1.0 and trajectory["status"] == "failed"  # the criteria as they were
    assert metrics[("paris_today", "response_match_score")]["threshold"] == 0.6
    assert trajectory.get("baselineScore") == 1.0, trajectory  # the baseline as it was
    assert cases["compare_cities"]["change"] == "regressed"
    assert {m["score"] for (_, name), m in metrics.items() if name == "probe"} == {48151.0}  # the metric as it was
    assert hostile["comment"][0].split("-->", 1)[1].lstrip().startswith("## failed\n")  # the template as it was
    assert "forged" not in hostile["comment"][0] and "forged" not in hostile["report"]

    # ... so everything is as in the reference run
    assert hostile["exit"] == reference["exit"] == 1, log[-5000:]
    assert hostile["outputs"] == reference["outputs"] and hostile["outputs"]["passed"] == "false"
    assert hostile["check"] == reference["check"] and hostile["check"][0] == "failure"
    assert hostile["comment"] == reference["comment"]
    assert hostile["report"] == reference["report"]
    assert _stable(hostile["results"]) == _stable(reference["results"])
