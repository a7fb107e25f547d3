"""The agent under test rewrites files the checker reads after it: the report template and
a custom metric module. In the real image, neither lets it run code as root, forge a log
line or change the verdict (docs/github-action.md#trust-model)."""

from __future__ import annotations

import json

from test_container_action import HEAD, FakeGitHub, Runner, docker_run, event, image, input_env  # noqa: F401

ANSWER = '''
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "user":
        print(json.dumps({"type": "response", "invocationId": msg["invocationId"],
                          "finalResponse": "no idea"}), flush=True)
'''

TEMPLATE_AGENT = r'''
import json, sys
open("report.j2", "w").write(
    "{{ lipsum.__globals__['__builtins__']['exec']('import os; os.write(1, b\"::warning::forged\\n\")') }}"
    "## \u2705 Agent evaluation passed\n")
''' + ANSWER

METRIC_AGENT = r'''
import json, sys
open("evalmetrics/short.py", "w").write(
    "import os\n"
    "os.write(1, b'::warning::forged from the custom metric module\\n')\n"
    "def short(eval_metric, actual, expected, scenario):\n"
    "    return float(os.getuid())\n")
''' + ANSWER


def log_lines(done) -> list[str]:
    return (done.stdout + done.stderr).splitlines()


def run_with_custom_metric(image, runner, fake, agent: str, name: str, module: str, *,  # noqa: F811
                           threshold: float):
    """The Action in the image, the agent ``agent``, and custom metric ``name`` (module
    ``evalmetrics/NAME.py``, function NAME) added to the example's criteria."""
    (runner.workspace / "agent.py").write_text(agent)
    (runner.workspace / "evalmetrics").mkdir()
    (runner.workspace / "evalmetrics" / "__init__.py").write_text("")
    (runner.workspace / "evalmetrics" / f"{name}.py").write_text(module)
    config = runner.workspace / "agent_evals" / "test_config.json"
    data = json.loads(config.read_text())
    data["criteria"][name] = threshold
    data["custom_metrics"] = {name: {"code_config": {"name": f"evalmetrics.{name}.{name}"}}}
    config.write_text(json.dumps(data))
    env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
           **input_env(fake.token, paths="agent_evals", agent_command="python agent.py",
                       num_runs="1", baseline="off")}
    done = docker_run(image, runner, env)
    assert done.returncode == 1, done.stdout + done.stderr
    return done


def metric_scores(runner, name: str) -> set:
    results = json.loads((runner.workspace / "evalcheck-report" / "results.json").read_text())
    return {m["score"] for s in results["evalSets"] for c in s["cases"]
            for m in c["metrics"] if m["name"] == name}


def test_a_template_the_agent_rewrites_is_not_what_is_rendered(image, tmp_path):  # noqa: F811
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "ws", event())
        (runner.workspace / "agent.py").write_text(TEMPLATE_AGENT)
        (runner.workspace / "report.j2").write_text(
            "## {{ 'passed' if results.passed else 'failed' }} ({{ results.summary.cases }} cases)\n")
        env = {**runner.github_env(fake.base_url, in_container=True, head_sha=HEAD),
               **input_env(fake.token, paths="agent_evals", agent_command="python agent.py",
                           template="report.j2", num_runs="1", baseline="off")}
        done = docker_run(image, runner, env)
        assert done.returncode == 1, done.stdout + done.stderr
        assert not [line for line in log_lines(done) if line.startswith("::warning::forged")]
        assert runner.outputs().get("passed") == "false", done.stdout[-3000:] + done.stderr[-3000:]
        (comment,) = fake.comments[7]
        assert comment["body"].endswith("## failed (2 cases)\n")  # the template as it was
        (check,) = fake.check_runs.values()
        assert check["conclusion"] == "failure"


def test_a_custom_metric_the_agent_rewrites_is_not_what_scores(image, tmp_path):  # noqa: F811
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "ws", event())
        done = run_with_custom_metric(image, runner, fake, METRIC_AGENT, "short",
                                      "def short(eval_metric, actual, expected, scenario):\n"
                                      "    return 0.0\n", threshold=0.5)
        assert not [line for line in log_lines(done) if line.startswith("::warning::forged")]
        scores = metric_scores(runner, "short")
        # the module as it was before the agent ran (a private copy, issue 22), not the
        # rewritten one (which would return the uid it runs as); test_container_trust.py
        # shows the metric runs as evalcheck-agent in every mode
        assert scores == {0.0}, scores


PROBE_AGENT = r'''
import json, os, sys
os.chmod(".", 0o777)  # the working directory, world-writable: a later custom metric...
os.makedirs("evalcheck-report", exist_ok=True)
os.chmod("evalcheck-report", 0o777)
''' + ANSWER

PROBE_METRIC = """
import os

def probe(eval_metric, actual, expected, scenario):
    wrote = 0
    try:  # ... would write the workspace as the agent's user after the agents ended
        open("/github/workspace/metric-wrote.txt", "w").write("x")
        wrote += 1
    except OSError:
        pass
    try:  # ... and point the results file, which root writes next, elsewhere
        os.symlink("/github/workspace/planted.txt", "/github/workspace/evalcheck-report/results.json")
        wrote += 2
    except OSError:
        pass
    return float(wrote)
"""


def test_a_custom_metric_after_the_agents_can_write_nothing_of_the_workspace(image, tmp_path):  # noqa: F811
    with FakeGitHub() as fake:
        runner = Runner.create(tmp_path / "ws", event())
        run_with_custom_metric(image, runner, fake, PROBE_AGENT, "probe", PROBE_METRIC, threshold=0.0)
        report = runner.workspace / "evalcheck-report" / "results.json"
        assert not report.is_symlink() and not (runner.workspace / "planted.txt").exists()
        assert not (runner.workspace / "metric-wrote.txt").exists()
        assert metric_scores(runner, "probe") == {0.0}
