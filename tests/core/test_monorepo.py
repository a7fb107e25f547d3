"""A monorepo runs as one (issue 23.2): eval sets are told apart by id and file.

The layout is the one that broke real repositories: agent-starter-pack's templates all name
their eval set ``basic_eval`` (``tests/eval/evalsets/basic.evalset.json`` beside
``tests/eval/eval_config.json``), and adk-samples' legacy files take their file name as id
(``data-science/eval/eval_data/simple.test.json`` and ``customer-service/.../simple.test.json``).
"""

from __future__ import annotations

import json
import shlex

import pytest

from corehelpers import case, evalset, invocation, replay, run_cli, write_json

AGENTS = ("adk_base", "agentic_rag", "langgraph_base")  # agent-starter-pack's template names
CRITERIA = {"criteria": {"response_match_score": 0.5}}


def basic(agent: str) -> str:
    return f"{agent}/tests/eval/evalsets/basic.evalset.json"


@pytest.fixture
def monorepo(repo):
    """Ten eval files: three ``basic_eval`` sets, two legacy ``simple`` sets, five others."""
    for agent in AGENTS:
        write_json(repo / basic(agent), evalset("basic_eval", case("greeting", invocation("hi", "Hello!"))))
        write_json(repo / f"{agent}/tests/eval/eval_config.json", CRITERIA)
    for agent in ("data-science", "customer-service"):
        write_json(repo / f"{agent}/eval/eval_data/simple.test.json", [{"query": "hi", "reference": "Hello!"}])
        write_json(repo / f"{agent}/eval/eval_data/test_config.json", CRITERIA)
    for n in range(5):
        write_json(repo / f"other{n}/o.evalset.json", evalset(f"other{n}", case("c1", invocation("hi", "Hello!"))))
        write_json(repo / f"other{n}/test_config.json", CRITERIA)
    return repo


def runs_for(repo, answers: dict[str, str] | None = None, with_paths: bool = True) -> None:
    """One recorded run a case; ``answers``: eval file -> its answer (default "Hello!")."""
    answers = answers or {}
    runs = []
    for agent in AGENTS:
        runs.append({"evalSetId": "basic_eval", "evalId": "greeting", "run": 1,
                     "invocations": [invocation("hi", answers.get(basic(agent), "Hello!"))],
                     **({"evalSetPath": basic(agent)} if with_paths else {})})
    for agent in ("data-science", "customer-service"):
        path = f"{agent}/eval/eval_data/simple.test.json"
        runs.append({"evalSetId": "simple", "evalSetPath": path, "evalId": "simple", "run": 1,
                     "invocations": [invocation("hi", answers.get(path, "Hello!"), invocation_id="turn-1")]})
    for n in range(5):
        runs.append({"evalSetId": f"other{n}", "evalId": "c1", "run": 1, "invocations": [invocation("hi", "Hello!")]})
    write_json(repo / "runs.json", {"version": 1, "runs": runs})


def results(repo, name="r.json"):
    return json.loads((repo / name).read_text())


def statuses(data) -> dict[tuple[str, str], str]:
    return {(s["evalSetId"], s["path"]): "/".join(c["status"] for c in s["cases"]) for s in data["evalSets"]}


def test_shared_ids_are_evaluated_apart(monorepo):
    runs_for(monorepo, {basic("agentic_rag"): "Goodbye."})
    out = run_cli(["run", ".", "--replay", "runs.json", "--results", "r.json", "--markdown", "r.md"], monorepo)
    assert out.code == 1, out.output
    found = statuses(results(monorepo))
    assert len(found) == 10
    assert found[("basic_eval", basic("agentic_rag"))] == "failed"
    assert found[("basic_eval", basic("adk_base"))] == found[("basic_eval", basic("langgraph_base"))] == "passed"
    assert found[("simple", "data-science/eval/eval_data/simple.test.json")] == "passed"
    assert f"{basic('agentic_rag')}:" in out.stdout  # the failing line names the file
    report = (monorepo / "r.md").read_text().replace("\\_", "_")
    assert f"basic_eval · {basic('agentic_rag')}" in report


def test_one_malformed_file_among_ten_is_exit_2_with_a_full_report_of_the_others(monorepo):
    (monorepo / "other3/o.evalset.json").write_text('{"eval_set_id": "other3", "eval_cases": [}')
    runs_for(monorepo)
    data = json.loads((monorepo / "runs.json").read_text())
    data["runs"] = [r for r in data["runs"] if r["evalSetId"] != "other3"]
    write_json(monorepo / "runs.json", data)
    out = run_cli(["run", ".", "--replay", "runs.json", "--results", "r.json", "--markdown", "r.md",
                   "--junit", "j.xml"], monorepo)
    assert out.code == 2, out.output
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("evalcheck: error: ")]
    assert errors[0].startswith("evalcheck: error: other3/o.evalset.json:1: invalid JSON")
    assert "1 eval file could not be read (other3/o.evalset.json)" in errors[-1]
    written = results(monorepo)
    assert len(written["evalSets"]) == 9 and written["summary"]["passed"] == 9
    assert written["passed"] is False
    assert [e["path"] for e in written["fileErrors"]] == ["other3/o.evalset.json"]
    assert "could not be read" in (monorepo / "r.md").read_text()
    assert (monorepo / "j.xml").read_text().count("<testcase ") == 9


def test_every_file_unreadable_is_exit_2_before_anything_runs(repo):
    (repo / "a").mkdir()
    (repo / "a/x.evalset.json").write_text("{")
    (repo / "a/y.evalset.json").write_text("[1]")
    write_json(repo / "runs.json", replay())
    out = run_cli(["run", ".", "--replay", "runs.json", "--results", "r.json"], repo)
    assert out.code == 2 and not (repo / "r.json").exists()
    assert "none of the 2 eval files could be read" in out.stderr


def test_a_run_of_a_shared_id_without_its_path_is_bad_input(monorepo):
    runs_for(monorepo, with_paths=False)
    out = run_cli(["run", ".", "--replay", "runs.json"], monorepo)
    assert out.code == 2
    assert "an id used by adk_base/tests/eval/evalsets/basic.evalset.json and" in out.stderr
    assert 'add "evalSetPath"' in out.stderr


def test_baseline_comparison_keeps_shared_ids_apart(monorepo):
    runs_for(monorepo, {basic("agentic_rag"): "Goodbye."})
    assert run_cli(["run", ".", "--replay", "runs.json", "--results", "base.json"], monorepo).code == 1
    runs_for(monorepo, {basic("langgraph_base"): "Goodbye.",
                        "customer-service/eval/eval_data/simple.test.json": "Goodbye."})
    out = run_cli(["run", ".", "--replay", "runs.json", "--results", "head.json", "--baseline", "base.json"],
                  monorepo)
    assert out.code == 1, out.output
    head = results(monorepo, "head.json")
    base_score = {(s["path"], c["evalId"]): c["metrics"][0]["baselineScore"]
                  for s in head["evalSets"] for c in s["cases"]}
    # each case met its own file's baseline case, not another agent's with the same id
    assert base_score[(basic("agentic_rag"), "greeting")] == 0.0
    assert base_score[(basic("langgraph_base"), "greeting")] == 1.0
    assert base_score[("customer-service/eval/eval_data/simple.test.json", "simple")] == 1.0
    summary = head["comparison"]["summary"]
    assert (summary["new"], summary["removed"], summary["changed"]) == (0, 0, 0)
    # a removed file of a shared id is named by its path
    (monorepo / basic("agentic_rag")).unlink()
    runs_for(monorepo)
    data = json.loads((monorepo / "runs.json").read_text())
    data["runs"] = [r for r in data["runs"] if r.get("evalSetPath") != basic("agentic_rag")]
    write_json(monorepo / "runs.json", data)
    run_cli(["run", ".", "--replay", "runs.json", "--results", "h2.json", "--baseline", "base.json"], monorepo)
    assert results(monorepo, "h2.json")["comparison"]["removed"] == [
        {"evalSetId": "basic_eval", "evalId": "greeting", "path": basic("agentic_rag")}]


def test_shards_and_merge_keep_shared_ids_apart(monorepo):
    runs_for(monorepo, {basic("agentic_rag"): "Goodbye."})
    for i in (1, 2):
        out = run_cli(["run", ".", "--replay", "runs.json", "--shard", f"{i}/2", "--results", f"s{i}.json",
                       "--inference-out", f"i{i}.json"], monorepo)
        assert out.code in (0, 1), out.output
    out = run_cli(["merge", "s1.json", "s2.json", "i1.json", "i2.json", "--results", "m.json",
                   "--inference-out", "m_runs.json"], monorepo)
    assert out.code == 1, out.output
    merged = statuses(results(monorepo, "m.json"))
    whole = run_cli(["run", ".", "--replay", "runs.json", "--results", "w.json"], monorepo)
    assert whole.code == 1
    assert merged == statuses(results(monorepo, "w.json")) and len(merged) == 10
    again = run_cli(["run", ".", "--replay", "m_runs.json", "--results", "again.json"], monorepo)
    assert again.code == 1 and statuses(results(monorepo, "again.json")) == merged


AGENT = r"""
while IFS= read -r line; do
  case "$line" in
    *'"type":"user"'*)
      printf '{"type":"response","invocationId":"inv-1","finalResponse":"%s"}\n' "$EVALCHECK_EVAL_SET_ID";;
  esac
done
"""


def test_a_live_agent_gets_the_real_id_and_recorded_runs_replay(monorepo):
    """The agent sees the eval set's own id; the recorded runs carry the file, so they replay."""
    for agent in AGENTS:
        write_json(monorepo / basic(agent), evalset("basic_eval", case("greeting", invocation("hi", "basic_eval"))))
    (monorepo / "agent.sh").write_text(AGENT)
    out = run_cli(["run", *(basic(a) for a in AGENTS), "--agent-command",
                   f"/bin/sh {shlex.quote(str(monorepo / 'agent.sh'))}", "--num-runs", "1",
                   "--inference-out", "rec.json", "--results", "live.json"], monorepo)
    assert out.code == 0, out.output
    recorded = results(monorepo, "rec.json")["runs"]
    assert sorted(r["evalSetPath"] for r in recorded) == sorted(basic(a) for a in AGENTS)
    again = run_cli(["run", *(basic(a) for a in AGENTS), "--replay", "rec.json", "--results", "re.json"], monorepo)
    assert again.code == 0, again.output
    assert statuses(results(monorepo, "re.json")) == statuses(results(monorepo, "live.json"))
