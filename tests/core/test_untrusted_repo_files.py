"""What a change under test brings in its own files - paths its eval and config files name, a
judge cache, a baseline file, a replay file - is its claim: under ``--confine`` (the Action's
rules on the command line) none of it decides the gate on its own (docs/command-line.md#untrusted-checkouts)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from corehelpers import run_cli, write_json

ECHO_AGENT = '''
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "user":
        print(json.dumps({"type": "response", "invocationId": msg["invocationId"],
                          "finalResponse": "fine"}), flush=True)
'''
PASSING_FUNCTION = "def evaluate(instance):\n    return {'score': 1.0}\n"


def agents_cli_project(root: Path, function_file: str) -> Path:
    """An agents-cli dataset of one case whose one metric is a custom_function_file."""
    (root / ".git").mkdir(parents=True)
    (root / "agent.py").write_text(ECHO_AGENT)
    evals = root / "tests" / "eval"
    write_json(evals / "datasets" / "d.json", {"eval_cases": [
        {"eval_case_id": "one", "prompt": {"role": "user", "parts": [{"text": "hi"}]}}]})
    (evals / "eval_config.yaml").write_text(
        "metrics_to_run:\n  - fn\ncustom_metrics:\n  - name: fn\n"
        f"    custom_function_file: {json.dumps(function_file)}\n")
    return root


def run_project(root: Path, *extra: str):
    return run_cli(["run", ".", "--agent-command", f"{sys.executable} agent.py", "--num-runs", "1",
                    "--threshold", "fn=1", *extra], root)


@pytest.mark.parametrize("named", ["absolute", "climbing"])
def test_a_custom_function_file_outside_the_checkout_is_refused_under_confine(tmp_path, named):
    outside = tmp_path / "outside" / "fn.py"
    outside.parent.mkdir()
    outside.write_text(PASSING_FUNCTION)
    ref = str(outside) if named == "absolute" else "../../../outside/fn.py"
    root = agents_cli_project(tmp_path / "repo", ref)
    done = run_project(root)  # without --confine: a path like any other, read and run
    assert done.code == 0, done.output
    done = run_project(root, "--confine", ".")
    assert done.code == 2, done.output
    assert ("tests/eval/eval_config.yaml at $.custom_metrics[0].custom_function_file: this "
            f"custom_function_file ({outside}) lies outside the workspace") in done.stderr
    assert "Traceback" not in done.output


def test_a_missing_file_outside_is_refused_as_outside_not_as_missing(tmp_path):
    """Whether a file outside exists is not the change's to learn from the log."""
    root = agents_cli_project(tmp_path / "repo", "/etc/evalcheck-no-such-file.py")
    done = run_project(root, "--confine", ".")
    assert done.code == 2 and "lies outside the workspace" in done.stderr, done.output
    assert "not found" not in done.stderr


def test_a_custom_function_file_inside_the_checkout_runs_under_confine(tmp_path):
    root = agents_cli_project(tmp_path / "repo", "metrics/fn.py")
    (root / "tests" / "eval" / "metrics").mkdir()
    (root / "tests" / "eval" / "metrics" / "fn.py").write_text(PASSING_FUNCTION)
    done = run_project(root, "--confine", ".", "--results", "r.json")
    assert done.code == 0, done.output
    (case,) = json.loads((root / "r.json").read_text())["evalSets"][0]["cases"]
    assert [(m["name"], m["score"]) for m in case["metrics"]] == [("fn", 1.0)]


# --------------------------------------------------------------------------- the judge cache

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "judges"))
from fake_gemini import FakeGemini, verdict  # noqa: E402

from changed_repo import commit, git  # noqa: E402

MATCH = "You grade answers given by an AI agent"  # final_response_match_v2's prompt


def judged_repo(root: Path) -> Path:
    """A git repository of one judged case whose recorded answer is wrong."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    turn = {"invocation_id": "t1", "user_content": {"role": "user", "parts": [{"text": "Capital of France?"}]},
            "final_response": {"role": "model", "parts": [{"text": "Paris."}]}}
    write_json(root / "evals" / "geo.evalset.json", {"eval_set_id": "geo", "eval_cases": [
        {"eval_id": "capital", "conversation": [turn]}]})
    write_json(root / "evals" / "test_config.json", {"criteria": {
        "final_response_match_v2": {"threshold": 1.0, "judge_model_options": {"num_samples": 1}}}})
    wrong = {**turn, "final_response": {"role": "model", "parts": [{"text": "Lyon."}]}}
    write_json(root / "runs.json", {"version": 1, "runs": [
        {"evalSetId": "geo", "evalId": "capital", "run": 1, "invocations": [wrong]}]})
    commit(root, "main")
    return root


@pytest.fixture
def judge(monkeypatch):
    with FakeGemini() as fake:
        for name in [n for n in __import__("os").environ if n.startswith(("GOOGLE_", "GEMINI_"))]:
            monkeypatch.delenv(name)
        monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
        monkeypatch.setenv("EVALCHECK_GEMINI_BASE_URL", fake.url)
        yield fake


def judged_run(root: Path, *extra: str):
    done = run_cli(["run", "evals", "--replay", "runs.json", "--results", "r.json", *extra], root)
    results = json.loads((root / "r.json").read_text()) if (root / "r.json").exists() else None
    (root / "r.json").unlink(missing_ok=True)
    return done, results


def committed_verdicts(root: Path, judge) -> None:
    """The attack: the change's author runs evalcheck against a judge of their own that
    finds the wrong answer valid, and commits the cache it wrote."""
    judge.on(MATCH, verdict(True))
    done, _ = judged_run(root, "--judge-cache", ".judge-cache")
    assert done.code == 0, done.output
    commit(root, "add the judge cache")
    judge.reset()
    judge.on(MATCH, verdict(False, "Lyon is not the capital"))  # the real judge


def test_committed_judge_answers_are_refused_under_confine(tmp_path, judge):
    root = judged_repo(tmp_path / "repo")
    committed_verdicts(root, judge)
    done, results = judged_run(root, "--judge-cache", ".judge-cache", "--confine", ".")
    assert done.code == 2 and results is None, done.output
    assert ("--judge-cache: .judge-cache is inside the workspace, where the change under test "
            "can commit cache entries") in done.stderr
    assert judge.requests == []


def test_committed_judge_answers_are_warned_about_without_confine(tmp_path, judge):
    """Plain evalcheck run trusts the checkout, as any tool does, and says what it took."""
    root = judged_repo(tmp_path / "repo")
    committed_verdicts(root, judge)
    done, results = judged_run(root, "--judge-cache", ".judge-cache")
    assert done.code == 0 and results["metadata"]["judge"]["cacheHits"] == 1, done.output
    assert "warning: --judge-cache .judge-cache: git tracks 1 file(s) in it (.judge-cache/" in done.stderr
    assert "pass --confine . to refuse it" in done.stderr


def test_a_judge_cache_outside_the_checkout_works_as_before_under_confine(tmp_path, judge):
    root = judged_repo(tmp_path / "repo")
    judge.on(MATCH, verdict(False, "Lyon is not the capital"))
    cache = tmp_path / "cache"
    first, results = judged_run(root, "--judge-cache", str(cache), "--confine", ".")
    assert first.code == 1 and results["metadata"]["judge"]["calls"] == 1, first.output
    second, results = judged_run(root, "--judge-cache", str(cache), "--confine", ".")
    assert second.code == 1 and results["metadata"]["judge"]["cacheHits"] == 1, second.output
    assert len(judge.requests) == 1 and "warning" not in first.stderr + second.stderr


# --------------------------------------------------------------------- a baseline file in the repository

from corehelpers import case, evalset, invocation, replay  # noqa: E402

RUNS = 8  # per case: enough for a drop from 8/8 to 0/8 to be a confirmed regression


def recorded(wrong: set[str]) -> dict:
    return replay(*[("s", eval_id, n, [invocation("hi", "Goodbye." if eval_id in wrong else "Hello there!")])
                    for eval_id in ("a", "b") for n in range(1, RUNS + 1)])


@pytest.fixture
def baseline_repo(tmp_path) -> Path:
    """main: two passing cases, their results committed as baseline.json; then a branch pr
    whose agent (its recorded runs) fails case a."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    write_json(root / "evals" / "s.evalset.json", evalset("s", case("a", invocation("hi", "Hello there!")),
                                                         case("b", invocation("hi", "Hello there!"))))
    write_json(root / "evals" / "test_config.json", {"criteria": {"response_match_score": 0.8}})
    write_json(root / "runs.json", recorded(set()))
    done = run_cli(["run", "evals", "--replay", "runs.json", "--results", "baseline.json"], root)
    assert done.code == 0, done.output
    commit(root, "main")
    git(root, "checkout", "-q", "-b", "pr")
    write_json(root / "runs.json", recorded({"a"}))
    commit(root, "pr: the agent breaks case a")
    return root


def gate(root: Path, *extra: str):
    done = run_cli(["run", "evals", "--replay", "runs.json", "--baseline", "baseline.json",
                    "--fail-on", "regression", "--results", "../r.json", "--markdown", "../r.md", *extra], root)
    results = json.loads((root.parent / "r.json").read_text()) if (root.parent / "r.json").exists() else None
    markdown = (root.parent / "r.md").read_text() if (root.parent / "r.md").exists() else ""
    for name in ("r.json", "r.md"):
        (root.parent / name).unlink(missing_ok=True)
    return done, results, markdown


def test_an_honest_pull_request_is_compared_with_the_committed_baseline(baseline_repo):
    done, results, _ = gate(baseline_repo, "--base", "main")
    assert done.code == 1, done.output
    assert results["comparison"]["summary"]["regressed"] == 1
    # the pull request left baseline.json alone (its recordings are its own: said apart)
    assert [c["kind"] for c in results["pullRequestFiles"]] == ["replay"]
    assert "baseline file" not in done.output


def test_a_baseline_file_the_pull_request_rewrote_is_read_at_the_base_commit(baseline_repo):
    base = git(baseline_repo, "rev-parse", "main")
    # The attack: the pull request rewrites the baseline so that main "failed" case a too.
    done = run_cli(["run", "evals", "--replay", "runs.json", "--results", "baseline.json"], baseline_repo)
    assert done.code == 1, done.output
    commit(baseline_repo, "pr: main failed a too, says the baseline")
    plain, _, _ = gate(baseline_repo)  # no base: the file is taken as given, as any tool does
    assert plain.code == 0, plain.output

    done, results, markdown = gate(baseline_repo, "--base", "main")
    assert done.code == 1, done.output
    assert results["comparison"]["summary"]["regressed"] == 1
    said = (f"baseline file baseline.json changed by this PR: 1 case's baseline lowered (the gate "
            f"used the base commit's version, {base[:7]})")
    assert f"warning: {said}" in done.stdout
    detail = ("lowered by the PR's version of baseline.json (not used for the gate): s/a (passed -> "
              "failed; response_match_score 1.00 -> 0.00)")
    assert f"  {detail}" in done.stdout
    claim, _ = results["pullRequestFiles"]  # and the replay file's
    assert (claim["kind"], claim["path"], claim["change"], claim["baseCommit"], claim["said"]) == (
        "baseline", "baseline.json", "changed", base, said)
    assert results["comparison"]["baseline"]["commit"] == base
    from checker.report.markdown import md_escape

    headline = markdown.splitlines()[0]
    assert headline == "## ❌ Gate failed: 1 case regressed (a)."
    assert f"- {md_escape(said)}" in markdown.splitlines()[2:6]  # a short line under it
    assert "> - " + detail.replace(">", "&gt;").replace("_", "\\_") in markdown
    assert f"compared with `baseline.json` at `{base[:7]}`" in markdown


def test_a_baseline_file_the_pull_request_added_is_not_used(baseline_repo):
    git(baseline_repo, "checkout", "-q", "main")
    git(baseline_repo, "rm", "-q", "baseline.json")
    commit(baseline_repo, "main keeps no baseline")
    git(baseline_repo, "checkout", "-q", "pr")
    git(baseline_repo, "rebase", "-q", "main")
    done = run_cli(["run", "evals", "--replay", "runs.json", "--results", "baseline.json"], baseline_repo)
    commit(baseline_repo, "pr: adds a baseline in which a fails")
    done, results, markdown = gate(baseline_repo, "--base", "main")
    assert done.code == 1 and "comparison" not in results, done.output
    assert "baseline file baseline.json added by this PR: not used for the gate" in done.stdout
    assert "no baseline to compare with" in done.stdout
    assert "- baseline file baseline.json added by this PR" in "\n".join(markdown.splitlines()[2:6])


def test_a_base_the_checkout_lacks_is_bad_input(baseline_repo):
    done, results, _ = gate(baseline_repo, "--base", "f" * 40)
    assert done.code == 2 and results is None, done.output
    assert "the baseline file baseline.json: " in done.stderr and "names no commit of this repository" in done.stderr
    assert "fetch-depth: 0" in done.stderr and "Traceback" not in done.output


# ------------------------------------------------------------------------ a replay file of the change

REPLAYED = "the verdict is the PR's own recordings, not a run of its agent"


def test_a_replay_file_the_pull_request_changed_is_said_to_be_its_own(baseline_repo):
    base = git(baseline_repo, "rev-parse", "main")
    done, results, markdown = gate(baseline_repo, "--base", "main")
    said = f"replay file runs.json changed by this PR: {REPLAYED}"
    assert f"warning: {said}" in done.stdout
    assert said in "\n".join(markdown.splitlines()[2:6])  # a short line under the headline
    (claim,) = results["pullRequestFiles"]
    assert (claim["kind"], claim["change"], claim["baseCommit"]) == ("replay", "changed", base)


def test_a_replay_file_the_pull_request_added_is_said_to_be_its_own(baseline_repo):
    write_json(baseline_repo / "mine.json", recorded(set()))
    commit(baseline_repo, "pr: recordings of its own")
    done = run_cli(["run", "evals", "--replay", "mine.json", "--base", "main"], baseline_repo)
    assert done.code == 0, done.output  # the recordings pass: the verdict stands, said to be theirs
    assert f"warning: replay file mine.json added by this PR: {REPLAYED}" in done.stdout


def test_recordings_the_pull_request_left_alone_say_nothing(baseline_repo):
    git(baseline_repo, "checkout", "-q", "main")
    done = run_cli(["run", "evals", "--replay", "runs.json", "--base", "main", "--results", "../r.json"],
                   baseline_repo)
    assert done.code == 0 and "warning" not in done.output, done.output
    assert "pullRequestFiles" not in json.loads((baseline_repo.parent / "r.json").read_text())


def test_a_shallow_checkout_says_the_recordings_may_be_the_pull_requests(baseline_repo, tmp_path):
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "pr", f"file://{baseline_repo}", str(shallow))
    main = git(baseline_repo, "rev-parse", "main")
    done = run_cli(["run", "evals", "--replay", "runs.json", "--base", main], shallow)
    assert done.code == 1, done.output
    assert ("warning: replay file runs.json: whether this PR changed it is unknown (its base commit "
            "is not in the checkout; fetch-depth: 0 tells)") in done.stdout


def test_the_merge_job_reads_a_rewritten_baseline_at_the_base_commit(baseline_repo, monkeypatch):
    """The Action's merge job compares the shards with the baseline file: the same rule."""
    from checker.commands.merge import MergeRequest, merge_files

    run_cli(["run", "evals", "--replay", "runs.json", "--results", "baseline.json"], baseline_repo)
    commit(baseline_repo, "pr: main failed a too, says the baseline")
    for shard in (1, 2):
        run_cli(["run", "evals", "--replay", "runs.json", "--shard", f"{shard}/2",
                 "--results", f"../shard-{shard}.json"], baseline_repo)
    monkeypatch.chdir(baseline_repo)
    shards = [baseline_repo.parent / f"shard-{n}.json" for n in (1, 2)]
    merged = merge_files(MergeRequest(files=shards, baselines=[Path("baseline.json")], base="main",
                                      fail_on="regression"))
    assert merged.comparison.summary.regressed == 1
    (claim,) = [c for c in merged.pull_request_files if c.kind == "baseline"]
    assert claim.said.startswith("baseline file baseline.json changed by this PR: 1 case's baseline lowered")
    unguarded = merge_files(MergeRequest(files=shards, baselines=[Path("baseline.json")], fail_on="regression"))
    assert unguarded.comparison.summary.regressed == 0  # no base: the file as given


# ------------------------------------------------- a path through a symbolic link the change committed

import os  # noqa: E402

WORKFLOWS = ".evalcheck/main-results.json"  # where a step of the workflow puts main's results


def linked_repo(baseline_repo: Path) -> tuple[Path, Path]:
    """main keeps no baseline file: the workflow restores main's results (passing, from the
    committed baseline.json) at .evalcheck/main-results.json, untracked. Returns (the
    honest file's content as a path to copy, the lowered results the attack brings)."""
    honest = baseline_repo.parent / "honest.json"
    lowered = baseline_repo.parent / "lowered.json"
    honest.write_bytes((baseline_repo / "baseline.json").read_bytes())
    done = run_cli(["run", "evals", "--replay", "runs.json", "--results", str(lowered)], baseline_repo)
    assert done.code == 1, done.output  # main "failed" case a too, says this file
    return honest, lowered


def workflow_gate(root: Path, baseline: str = WORKFLOWS):
    return gate_with(root, baseline, "--base", "main", "--confine", ".")


def gate_with(root: Path, baseline: str, *extra: str):
    done = run_cli(["run", "evals", "--replay", "runs.json", "--baseline", baseline, "--fail-on",
                    "regression", "--results", "../r.json", *extra], root)
    results = json.loads((root.parent / "r.json").read_text()) if (root.parent / "r.json").exists() else None
    (root.parent / "r.json").unlink(missing_ok=True)
    return done, results


def test_the_workflows_own_baseline_file_is_used_as_given(baseline_repo):
    """The control: a file git does not track, in a plain folder, is the workflow's."""
    honest, lowered = linked_repo(baseline_repo)
    (baseline_repo / ".evalcheck").mkdir()
    (baseline_repo / WORKFLOWS).write_bytes(honest.read_bytes())
    done, results = workflow_gate(baseline_repo)
    assert done.code == 1 and results["comparison"]["summary"]["regressed"] == 1, done.output
    assert "pullRequestFiles" not in results or all(c["kind"] != "baseline" for c in results["pullRequestFiles"])
    (baseline_repo / WORKFLOWS).write_bytes(lowered.read_bytes())  # the workflow's, lowered: its call
    done, results = workflow_gate(baseline_repo)
    assert done.code == 0 and results["comparison"]["summary"]["regressed"] == 0, done.output


def test_a_baseline_through_a_folder_the_pull_request_made_a_link_is_its_own(baseline_repo):
    _, lowered = linked_repo(baseline_repo)
    (baseline_repo / "prdata").mkdir()
    (baseline_repo / "prdata" / "main-results.json").write_bytes(lowered.read_bytes())
    os.symlink("prdata", baseline_repo / ".evalcheck")
    commit(baseline_repo, "pr: .evalcheck -> prdata, where main failed every case")
    assert git(baseline_repo, "ls-tree", "HEAD", "--", WORKFLOWS) == ""  # git tracks nothing there
    done, results = workflow_gate(baseline_repo)
    assert done.code == 1, done.output
    assert "comparison" not in results
    said = (f"baseline file {WORKFLOWS} added by this PR (through .evalcheck, a symbolic link in the "
            "checkout): not used for the gate")
    assert said in done.stdout and "Traceback" not in done.output
    (claim, _) = results["pullRequestFiles"]
    assert (claim["kind"], claim["path"], claim["change"]) == ("baseline", WORKFLOWS, "added")


def test_a_linked_folder_main_also_has_as_a_folder_is_read_at_the_base_commit(baseline_repo):
    """main commits its results under .evalcheck/; the pull request swaps the folder for a
    link to its own: main's version decides the gate."""
    honest, lowered = linked_repo(baseline_repo)
    git(baseline_repo, "checkout", "-q", "main")
    (baseline_repo / ".evalcheck").mkdir()
    (baseline_repo / WORKFLOWS).write_bytes(honest.read_bytes())
    commit(baseline_repo, "main keeps its results in .evalcheck/")
    git(baseline_repo, "checkout", "-q", "pr")
    git(baseline_repo, "rebase", "-q", "main")
    git(baseline_repo, "rm", "-q", "-r", ".evalcheck")
    (baseline_repo / "prdata").mkdir()
    (baseline_repo / "prdata" / "main-results.json").write_bytes(lowered.read_bytes())
    os.symlink("prdata", baseline_repo / ".evalcheck")
    commit(baseline_repo, "pr: .evalcheck -> prdata")
    done, results = workflow_gate(baseline_repo)
    assert done.code == 1 and results["comparison"]["summary"]["regressed"] == 1, done.output
    assert (f"baseline file {WORKFLOWS} changed by this PR (through .evalcheck, a symbolic link in "
            "the checkout): 1 case's baseline lowered") in done.stdout


def test_a_baseline_file_the_pull_request_committed_as_a_link_is_its_own(baseline_repo):
    _, lowered = linked_repo(baseline_repo)
    (baseline_repo / "prdata").mkdir()
    (baseline_repo / "prdata" / "main.json").write_bytes(lowered.read_bytes())
    (baseline_repo / ".evalcheck").mkdir()
    os.symlink("../prdata/main.json", baseline_repo / WORKFLOWS)
    commit(baseline_repo, "pr: .evalcheck/main-results.json -> ../prdata/main.json")
    done, results = workflow_gate(baseline_repo)
    assert done.code == 1 and "comparison" not in results, done.output
    assert (f"baseline file {WORKFLOWS} added by this PR (through {WORKFLOWS}, a symbolic link in the "
            "checkout)") in done.stdout


def test_dot_dot_after_a_link_is_the_file_the_link_leads_to(baseline_repo):
    """``sub/../.evalcheck/main-results.json`` reads as the workflow's file, but the system
    opens the one beside where ``sub`` leads: the pull request's."""
    honest, lowered = linked_repo(baseline_repo)
    (baseline_repo / "prdata" / "deep").mkdir(parents=True)
    (baseline_repo / "prdata" / ".evalcheck").mkdir()
    (baseline_repo / "prdata" / WORKFLOWS).write_bytes(lowered.read_bytes())
    os.symlink("prdata/deep", baseline_repo / "sub")
    commit(baseline_repo, "pr: sub -> prdata/deep, and prdata/.evalcheck/main-results.json")
    (baseline_repo / ".evalcheck").mkdir()
    (baseline_repo / WORKFLOWS).write_bytes(honest.read_bytes())  # the workflow's, honest, untracked
    control, results = workflow_gate(baseline_repo)
    assert control.code == 1 and results["comparison"]["summary"]["regressed"] == 1, control.output
    done, results = workflow_gate(baseline_repo, f"sub/../{WORKFLOWS}")
    assert done.code == 1, done.output
    assert "comparison" not in results
    assert (f"baseline file {WORKFLOWS} added by this PR (through sub, a symbolic link in the "
            "checkout)") in done.stdout


def test_a_replay_file_through_a_linked_folder_is_said_to_be_its_own(baseline_repo):
    git(baseline_repo, "checkout", "-q", "main")
    git(baseline_repo, "checkout", "-q", "-b", "pr2")
    (baseline_repo / "prdata").mkdir()
    write_json(baseline_repo / "prdata" / "runs.json", recorded(set()))
    os.symlink("prdata", baseline_repo / "recorded")
    commit(baseline_repo, "pr2: recorded -> prdata")
    done = run_cli(["run", "evals", "--replay", "recorded/runs.json", "--base", "main"], baseline_repo)
    assert done.code == 0, done.output
    assert ("warning: replay file recorded/runs.json added by this PR (through recorded, a symbolic "
            f"link in the checkout): {REPLAYED}") in done.stdout
    plain = run_cli(["run", "evals", "--replay", "runs.json", "--base", "main"], baseline_repo)
    assert plain.code == 0 and "warning" not in plain.output, plain.output  # main's own: nothing said


def test_a_link_head_holds_is_the_pull_requests_even_where_the_checkout_has_a_folder(baseline_repo):
    """A checkout that does not make links (core.symlinks=false) or a step that replaced the
    link with a folder: git tracks nothing at the path, yet HEAD's folder is the PR's link."""
    _, lowered = linked_repo(baseline_repo)
    os.symlink("prdata", baseline_repo / ".evalcheck")
    git(baseline_repo, "add", ".evalcheck")
    git(baseline_repo, "commit", "-q", "-m", "pr: .evalcheck -> prdata")
    (baseline_repo / ".evalcheck").unlink()
    (baseline_repo / ".evalcheck").mkdir()
    (baseline_repo / WORKFLOWS).write_bytes(lowered.read_bytes())
    done, results = workflow_gate(baseline_repo)
    assert done.code == 1 and "comparison" not in results, done.output
    assert (f"baseline file {WORKFLOWS} added by this PR (through .evalcheck, a symbolic link in "
            "HEAD)") in done.stdout


# ------------------------------------------------------- the command line in a pull-request job

def in_pull_request_job(monkeypatch, root: Path, base: str, event: str = "pull_request") -> None:
    """The variables and event file of a `run:` step of a GitHub Actions pull-request job."""
    path = root.parent / "event.json"
    path.write_text(json.dumps({"number": 7, "pull_request": {"number": 7, "base": {"sha": base, "ref": "main"},
                                                                 "head": {"sha": "a" * 40}}}))
    for name, value in {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event,
                        "GITHUB_EVENT_PATH": str(path), "GITHUB_WORKSPACE": str(root)}.items():
        monkeypatch.setenv(name, value)


def rewritten(baseline_repo: Path) -> str:
    """The attack: the pull request rewrites the committed baseline (main failed a too)."""
    run_cli(["run", "evals", "--replay", "runs.json", "--results", "baseline.json"], baseline_repo)
    commit(baseline_repo, "pr: main failed a too, says the baseline")
    return git(baseline_repo, "rev-parse", "main")


def test_run_in_a_pull_request_job_reads_the_base_from_the_event(baseline_repo, monkeypatch):
    base = rewritten(baseline_repo)
    plain, _, _ = gate(baseline_repo)  # the control: a plain command takes the file as given
    assert plain.code == 0, plain.output
    in_pull_request_job(monkeypatch, baseline_repo, base)
    done, results, _ = gate(baseline_repo)
    assert done.code == 1 and results["comparison"]["summary"]["regressed"] == 1, done.output
    assert results["comparison"]["baseline"]["commit"] == base
    assert (f"evalcheck: note: a GitHub Actions job of pull request #7: files the gate reads are "
            f"compared with its base commit {base[:12]}") in done.stderr
    assert "baseline file baseline.json changed by this PR: 1 case's baseline lowered" in done.stdout
    # --base says otherwise: the commit it names (here the PR's own: the file as committed)
    done, results, _ = gate(baseline_repo, "--base", "HEAD")
    assert done.code == 0 and "a GitHub Actions job" not in done.stderr, done.output
    # a push event is no pull request: as a plain command
    in_pull_request_job(monkeypatch, baseline_repo, base, event="push")
    assert gate(baseline_repo)[0].code == 0


def test_compare_and_merge_in_a_pull_request_job_read_the_base_from_the_event(baseline_repo, monkeypatch, tmp_path):
    base = rewritten(baseline_repo)
    run_cli(["run", "evals", "--replay", "runs.json", "--results", "../head.json"], baseline_repo)
    for shard in (1, 2):
        run_cli(["run", "evals", "--replay", "runs.json", "--shard", f"{shard}/2",
                 "--results", f"../shard-{shard}.json"], baseline_repo)
    compare = ["compare", "baseline.json", "../head.json", "--fail-on", "regression"]
    merge = ["merge", "../shard-1.json", "../shard-2.json", "--baseline", "baseline.json",
             "--fail-on", "regression"]
    assert run_cli(compare, baseline_repo).code == 0  # the controls: plain commands
    assert run_cli(merge, baseline_repo).code == 0
    in_pull_request_job(monkeypatch, baseline_repo, base)
    for command in (compare, merge):
        done = run_cli(command, baseline_repo)
        assert done.code == 1, (command, done.output)
        assert "baseline file baseline.json changed by this PR: 1 case's baseline lowered" in done.stdout


def test_a_judge_cache_inside_the_workspace_is_refused_in_a_pull_request_job(tmp_path, judge, monkeypatch):
    root = judged_repo(tmp_path / "repo")
    base = git(root, "rev-parse", "HEAD")
    in_pull_request_job(monkeypatch, root, base)
    done, _ = judged_run(root, "--judge-cache", ".judge-cache")
    assert done.code == 2, done.output
    assert "--judge-cache: .judge-cache" in done.stderr and "Traceback" not in done.output
    outside = tmp_path / "cache"
    done, results = judged_run(root, "--judge-cache", str(outside))  # the control
    assert done.code == 1 and results["metadata"]["judge"]["calls"] == 1, done.output
