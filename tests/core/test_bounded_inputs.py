"""Bounded inputs (issue 11 item 5), through the real command line: caps on runs and
timeouts, deep JSON, NUL ids, unreadable folders - each a clear error, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from corehelpers import case, evalset, invocation, replay, run_cli, write_json

from checker.safety.limits import MAX_RUNS, MAX_TURN_TIMEOUT


def assert_one_line_error(outcome, *fragments: str) -> str:
    assert outcome.code == 2, outcome.output
    assert "Traceback" not in outcome.output
    lines = [ln for ln in outcome.stderr.strip().splitlines() if not ln.startswith("evalcheck: warning: ")]
    assert len(lines) == 1, outcome.stderr
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    return lines[0]


@pytest.fixture
def evals(repo):
    write_json(repo / "evals" / "s.evalset.json", evalset("s", case("c1")))
    write_json(repo / "runs.json", replay(("s", "c1", 1, [invocation()])))
    return repo


def test_num_runs_above_the_cap_is_a_clear_error(evals):
    outcome = run_cli(["run", "evals", "--agent-command", "true", "--num-runs", str(MAX_RUNS + 1)], evals)
    assert_one_line_error(outcome, f"num-runs is {MAX_RUNS + 1}", f"maximum of {MAX_RUNS}")


def test_num_runs_at_the_cap_is_accepted(evals):
    outcome = run_cli(["run", "evals", "--replay", "runs.json", "--num-runs", str(MAX_RUNS)], evals)
    assert outcome.code == 0, outcome.output


@pytest.mark.parametrize("value", ["nan", "inf", "1e300"])
def test_turn_timeout_must_be_finite(evals, value):
    outcome = run_cli(["run", "evals", "--agent-command", "true", "--turn-timeout", value], evals)
    assert outcome.code == 2, outcome.output
    assert "Traceback" not in outcome.output
    assert "turn-timeout" in outcome.output


def test_turn_timeout_cap_is_a_day(evals):
    outcome = run_cli(["run", "evals", "--agent-command", "true",
                       "--turn-timeout", str(MAX_TURN_TIMEOUT + 1)], evals)
    assert_one_line_error(outcome, "turn-timeout", f"maximum of {MAX_TURN_TIMEOUT:g} s")


# ------------------------------------------------------------------ case lines (item 7)

def test_case_lines_with_escapes_and_decoys(repo):
    """One pass over the file finds each id however it is escaped, skipping an earlier
    mention of the same text as another key's value, and keeps file order for the rest."""
    from checker.inputs.evalfile import load_eval_file

    text = ('{"eval_set_id": "s", "eval_cases": [\n'
            '  {"eval_id": "\\u0063afe", "conversation": [{"invocation_id": "i",\n'
            '    "user_content": {"role": "user", "parts": [{"text": "eval_id: second"}]}}]},\n'
            '  {"eval_id":\n"second", "conversation": []},\n'
            '  {"eval_id": "third", "conversation": []}\n]}\n')
    path = repo / "s.evalset.json"
    path.write_text(text, encoding="utf-8")
    assert load_eval_file(path).case_lines == {"cafe": 2, "second": 4, "third": 6}


# ------------------------------------------------------------------ deep JSON

def nested(depth: int) -> str:
    return '{"a": ' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [300, 100_000])
def test_deep_eval_file_is_a_clear_error(evals, depth):
    text = json.dumps(evalset("s", case("c1"))).replace('"eval_set_id"', f'"x": {nested(depth)}, "eval_set_id"', 1)
    (evals / "evals" / "s.evalset.json").write_text(text, encoding="utf-8")
    line = assert_one_line_error(run_cli(["run", "evals", "--replay", "runs.json"], evals),
                                 "evals/s.evalset.json", "nested more than 200 levels deep")
    if depth == 300:
        assert "at $.x.a.a" in line


def test_deep_replay_file_is_a_clear_error(evals):
    (evals / "runs.json").write_text(nested(5000), encoding="utf-8")
    assert_one_line_error(run_cli(["run", "evals", "--replay", "runs.json"], evals),
                          "runs.json", "nested more than 200 levels deep")


DEEP_AGENT = r'''
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] != "user":
        continue
    case = m["invocationId"]
    deep = "{\"a\": " * DEPTH + "1" + "}" * DEPTH
    if sys.argv[1] == "deep":
        print('{"type": "response", "invocationId": "%s", "finalResponse": "ok", "toolUses": [{"name": "t", "args": %s}]}' % (case, deep), flush=True)
    else:
        print(json.dumps({"type": "response", "invocationId": case, "finalResponse": "ok"}), flush=True)
'''


@pytest.mark.parametrize("depth", [300, 50_000])
def test_deep_agent_reply_fails_only_its_run(repo, depth):
    """A reply nested too deeply fails that run at once with the reason (no reader death,
    no turn timeout, no serialisation crash of the results file); the other case passes."""
    write_json(repo / "evals" / "s.evalset.json", evalset("s", case("deep"), case("fine")))
    (repo / "agent.py").write_text(DEEP_AGENT.replace("DEPTH", str(depth)), encoding="utf-8")
    command = f'{sys.executable} agent.py "$(test "$EVALCHECK_EVAL_ID" = deep && echo deep || echo fine)"'
    outcome = run_cli(["run", "evals", "--agent-command", command, "--num-runs", "1",
                       "--turn-timeout", "30", "--results", "results.json"], repo)
    assert outcome.code == 1, outcome.output
    assert "Traceback" not in outcome.output
    results = json.loads((repo / "results.json").read_text())
    runs = {c["evalId"]: c["runs"][0] for c in results["evalSets"][0]["cases"]}
    assert "nested more than 200 levels deep" in runs["deep"]["error"], runs["deep"]
    assert runs["deep"]["durationSeconds"] < 20
    assert runs["fine"]["status"] == "passed", runs["fine"]


# ------------------------------------------------------------------ ids, folders

def test_nul_in_an_id_is_bad_input(evals):
    write_json(evals / "evals" / "s.evalset.json", evalset("s", case("c1"), case("c\u0000x")))
    assert_one_line_error(run_cli(["run", "evals", "--replay", "runs.json"], evals),
                          "evals/s.evalset.json", "$.eval_cases[1].eval_id", "NUL character")


def test_nul_in_a_legacy_case_name_is_bad_input(evals):
    write_json(evals / "evals" / "old.test.json", [{"name": "a\u0000", "data": [{"query": "hi"}]}])
    assert_one_line_error(run_cli(["run", "evals/old.test.json", "--replay", "runs.json"], evals),
                          "old.test.json", "$[0].name", "NUL character")


def test_run_on_the_file_system_root_is_refused(evals):
    assert_one_line_error(run_cli(["run", "/", "--replay", "runs.json"], evals),
                          "refusing to search the whole file system")


def _without_root_reads(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed console script; as root, without the capabilities that let root read
    every folder (setpriv, util-linux), so that a chmod 000 folder is really unreadable."""
    script = shutil.which("evalcheck", path=str(Path(sys.executable).parent))
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    return subprocess.run([*prefix, script, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("arg", ["evals", "evals/locked/x.evalset.json"])
def test_unreadable_folders_are_reported(evals, arg):
    locked = evals / "evals" / "locked"
    locked.mkdir()
    write_json(locked / "x.evalset.json", evalset("x", case("c1")))
    locked.chmod(0)
    try:
        done = _without_root_reads(["run", arg, "--replay", "runs.json"], evals)
    finally:
        locked.chmod(0o755)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "locked" in line and "Permission denied" in line, line


def test_plain_run_follows_symlinks_like_any_command_line_tool(evals, tmp_path_factory):
    """Only the Action confines reads to the workspace (tests/github/test_action_confinement.py)."""
    outside = tmp_path_factory.mktemp("outside")
    write_json(outside / "s.evalset.json", evalset("s", case("c1")))
    (evals / "evals" / "s.evalset.json").unlink()
    (evals / "evals" / "s.evalset.json").symlink_to(outside / "s.evalset.json")
    outcome = run_cli(["run", "evals", "--replay", "runs.json"], evals)
    assert outcome.code == 0, outcome.output


# ------------------------------------------------------------------ file descriptors

ECHO_AGENT = r'''
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m["type"] == "user":
        print(json.dumps({"type": "response", "invocationId": m["invocationId"], "finalResponse": "ok"}), flush=True)
'''


def test_concurrency_is_lowered_to_what_ulimit_allows(evals):
    """Under `ulimit -n 128` (soft and hard), --concurrency 64 would need about 576 open
    files: evalcheck runs fewer at once, says so, and every run passes."""
    import resource

    from checker.safety.limits import FD_RESERVE, FDS_PER_RUN

    write_json(evals / "evals" / "s.evalset.json", evalset("s", *[case(f"c{i}") for i in range(6)]))
    (evals / "agent.py").write_text(ECHO_AGENT, encoding="utf-8")
    script = shutil.which("evalcheck", path=str(Path(sys.executable).parent))
    done = subprocess.run(
        [script, "run", "evals", "--agent-command", f"{sys.executable} agent.py", "--num-runs", "2",
         "--concurrency", "64", "--results", "results.json"],
        cwd=evals, capture_output=True, text=True, timeout=300,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128)))
    assert done.returncode == 0, done.stdout + done.stderr
    allowed = (128 - FD_RESERVE) // FDS_PER_RUN
    assert (f"warning: concurrency 64 needs about {FD_RESERVE + 64 * FDS_PER_RUN} open files, "
            f"but the limit (ulimit -n) is 128: running {allowed} at once") in done.stderr
    results = json.loads((evals / "results.json").read_text())
    assert results["summary"]["passed"] == 6


def test_running_out_of_descriptors_fails_only_the_runs_it_hits(tmp_path):
    """With every descriptor taken, a run fails with the reason (no exception, no hang);
    once descriptors are free again the next run passes."""
    import asyncio
    import resource

    from checker.models.evalset import EvalCase
    from checker.agents.base import RunJob
    from checker.agents.stdio import StdioRunner

    (tmp_path / "agent.py").write_text(ECHO_AGENT, encoding="utf-8")
    case_ = EvalCase.model_validate(case("c1"))
    runner = StdioRunner(f"{sys.executable} agent.py", cwd=tmp_path)

    async def scenario():
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        held = []
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
            while True:
                try:
                    held.append(os.open(os.devnull, os.O_RDONLY))
                except OSError:
                    break
            starved = await runner.run(RunJob(eval_set_id="s", case=case_, run=1, turn_timeout=10))
        finally:
            for fd in held:
                os.close(fd)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        fine = await runner.run(RunJob(eval_set_id="s", case=case_, run=2, turn_timeout=10))
        return starved, fine

    starved, fine = asyncio.run(scenario())
    assert starved.error and "Too many open files" in starved.error, starved
    assert fine.error is None and len(fine.invocations) == 1, fine


def test_deep_api_server_answer_fails_only_its_run(repo):
    """--agent-url: an answer nested too deeply fails that run with the reason; the other
    case's run goes on and passes."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def reply(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self.reply(b'["app"]')

        def do_DELETE(self):
            self.reply(b"{}")

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path.endswith("/sessions"):
                return self.reply(b'{"id": "s1"}')
            text = body["newMessage"]["parts"][0]["text"]
            final = {"invocationId": "e1", "author": "app",
                     "content": {"role": "model", "parts": [{"text": "ok"}]}}
            if text == "deep":
                self.reply(("[" + nested(50_000) + "]").encode())
            else:
                self.reply(json.dumps([final]).encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        write_json(repo / "evals" / "s.evalset.json",
                   evalset("s", case("deep", invocation("deep")), case("fine", invocation("fine"))))
        outcome = run_cli(["run", "evals", "--agent-url", f"http://127.0.0.1:{server.server_port}",
                           "--app-name", "app", "--num-runs", "1", "--results", "results.json"], repo)
    finally:
        server.shutdown()
    assert outcome.code == 1, outcome.output
    assert "Traceback" not in outcome.output
    runs = {c["evalId"]: c["runs"][0] for c in json.loads((repo / "results.json").read_text())["evalSets"][0]["cases"]}
    assert "nested more than 200 levels deep" in runs["deep"]["error"], runs["deep"]
    assert runs["fine"]["status"] == "passed", runs["fine"]


def test_an_answer_too_large_to_score_errors_its_run_not_the_job(repo):
    """Issue 22: ~48 MB of distinct words cost 12 minutes of ROUGE and 1.1 GB. Past
    MAX_SCORED_CHARS a run is an errored run: nothing scores it."""
    import time

    from checker.safety.limits import MAX_SCORED_CHARS
    from corehelpers import case, evalset, invocation, replay, run_cli, write_json

    huge = " ".join(f"w{i}" for i in range(MAX_SCORED_CHARS // 4))  # distinct words, > the bound
    write_json(repo / "e" / "s.evalset.json", evalset("s", case("c", invocation("q", "short answer"))))
    write_json(repo / "e" / "test_config.json", {"criteria": {"response_match_score": 0.5}})
    write_json(repo / "r.json", replay(("s", "c", 1, [invocation("q", "short answer")]),
                                       ("s", "c", 2, [invocation("q", huge)])))
    began = time.monotonic()
    out = run_cli(["run", "e", "--replay", "r.json", "--results", "out.json"], repo)
    assert out.code == 1, out.output
    assert time.monotonic() - began < 30
    data = __import__("json").loads((repo / "out.json").read_text())
    runs = data["evalSets"][0]["cases"][0]["runs"]
    assert runs[0]["status"] == "passed" and runs[1]["status"] == "error"
    assert "above the 1,000,000 a run may have scored" in runs[1]["error"]
