"""The API-server runner: sessions, turns, and every way the server can fail a run."""

from __future__ import annotations

import asyncio
import shlex
import socket

from checker.models.evalset import EvalCase
from checker.agents.api_server import ApiServerRunner, ServerStartError
from checker.agents.base import RunJob

from .helpers import AGENTS, PY, assert_all_gone, case, read_pids


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server(tmp_path, command: str | None = None, **kwargs):
    port = free_port()
    pidfile = tmp_path / "pids"
    command = command or f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'tiny_api_server.py'))} {port} {pidfile}"
    runner = ApiServerRunner(f"http://127.0.0.1:{port}", server_command=command, cwd=tmp_path,
                             **kwargs)
    return runner, pidfile


def run_all(runner, jobs: list[RunJob]):
    async def go():
        try:
            await runner.start()
            return [await runner.run(job) for job in jobs]
        finally:
            await runner.aclose()
    return asyncio.run(go())


def start_error(runner) -> ServerStartError:
    async def go():
        try:
            await runner.start()
        finally:
            await runner.aclose()
    try:
        asyncio.run(go())
    except ServerStartError as exc:
        return exc
    raise AssertionError("no ServerStartError")


def tiny_case(eval_id="c", text="Hello", turns=2, session_id=None) -> EvalCase:
    c = case(eval_id, turns=turns, text=text, state={"user_name": "Ada"})
    c.session_input.app_name = "tiny"
    c.session_input.session_id = session_id
    return c


def test_fresh_session_per_run_with_the_case_state(tmp_path):
    runner, pidfile = server(tmp_path)
    pinned = tiny_case(session_id="pinned-id")
    runs = run_all(runner, [RunJob("s", pinned, 1), RunJob("s", pinned, 2)])
    assert [r.error for r in runs] == [None, None]
    for run in runs:
        assert [i.final_response.parts[0].text for i in run.invocations] == ["answer for Ada"] * 2
        first = run.invocations[0]
        assert first.invocation_id.startswith("e-") and first.duration is not None
        events = first.intermediate_data.invocation_events
        assert events[0].content.parts[0].function_call.name == "lookup"
        assert events[0].usage_metadata == {"promptTokenCount": 7}
    # Each run's session is deleted (off the run's clock, but before the server is stopped).
    log = runner.server_tail().splitlines()
    created = [line.split()[1] for line in log if line.startswith("session ")]
    assert len(created) == 2 and sorted(f"deleted {sid}" for sid in created) == \
        sorted(line for line in log if line.startswith("deleted "))
    assert_all_gone(read_pids(pidfile))


def test_server_command_that_dies_fails_every_run_with_its_output(tmp_path):
    runner, _ = server(tmp_path, "echo 'ImportError: no module named agent' >&2; exit 3")
    exc = start_error(runner)
    assert str(exc).startswith("the agent server command exited with status 3 before answering at http://127.0.0.1:")
    assert exc.tail == "ImportError: no module named agent"


def test_server_that_never_answers_is_stopped(tmp_path):
    port = free_port()
    pidfile = tmp_path / "pids"
    command = (f"TINY_STARTUP_DELAY=60 {shlex.quote(PY)} "
               f"{shlex.quote(str(AGENTS / 'tiny_api_server.py'))} {port} {pidfile}")
    runner = ApiServerRunner(f"http://127.0.0.1:{port}", server_command=command,
                             startup_timeout=1.0, kill_grace=0.5)
    exc = start_error(runner)
    assert str(exc) == (f"the agent server did not answer GET http://127.0.0.1:{port}/list-apps "
                        "within 1 s (ConnectError)")
    assert exc.tail == "tiny server starting"
    assert_all_gone(read_pids(pidfile))


def test_turn_timeout_http_error_and_unknown_app(tmp_path):
    runner, pidfile = server(tmp_path)
    other_app = tiny_case("other")
    other_app.session_input.app_name = "weather"
    runs = run_all(runner, [
        RunJob("s", tiny_case("slow", text="SLOW"), 1, turn_timeout=0.5),
        RunJob("s", tiny_case("fail", text="FAIL"), 1),
        RunJob("s", other_app, 1),
        RunJob("s", tiny_case("ok"), 1),
    ])
    assert [r.error for r in runs] == [
        "turn 1: no answer within 0.5 s (--turn-timeout)",
        'turn 1: the agent server answered HTTP 500: {"detail": "Internal Server Error"}',
        "the agent server has no app 'weather' (it serves: tiny); set session_input.app_name or pass --app-name",
        None,
    ]
    assert "tiny server starting" in runs[0].stderr_tail
    assert_all_gone(read_pids(pidfile))


def test_no_server_at_the_url_is_known_at_once(tmp_path):
    import time

    url = f"http://127.0.0.1:{free_port()}"
    runner = ApiServerRunner(url, connect_timeout=10.0)
    began = time.monotonic()
    exc = start_error(runner)
    assert time.monotonic() - began < 2.0  # a refused connection is not waited on
    assert str(exc).startswith(f"cannot connect to {url}: ")
    assert "pass --agent-server-command" in str(exc)
    assert exc.tail is None


def test_cli_stops_at_once_on_a_dead_server(tmp_path):
    """One message and exit status 2, not the same failure once per case and run."""
    import subprocess

    from .helpers import write_eval_set

    path = write_eval_set(tmp_path / "evals", "set", [tiny_case("a"), tiny_case("b")])
    port = free_port()
    done = subprocess.run(
        [PY, "-c", "from checker.cli import main; main()", "run", str(path),
         "--agent-url", f"http://127.0.0.1:{port}", "--agent-server-command",
         "echo 'cannot import agent' >&2; exit 3", "--num-runs", "2",
         "--results", str(tmp_path / "r.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("evalcheck: error: the agent server cannot be used: the agent "
                                  "server command exited with status 3 before answering"), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.endswith("; its last output: cannot import agent\n")
    assert not (tmp_path / "r.json").exists()


def test_cli_stops_at_once_when_nothing_listens(tmp_path):
    import subprocess
    import time

    from .helpers import write_eval_set

    path = write_eval_set(tmp_path / "evals", "set", [tiny_case("a"), tiny_case("b")])
    url = f"http://127.0.0.1:{free_port()}"
    began = time.monotonic()
    done = subprocess.run(
        [PY, "-c", "from checker.cli import main; main()", "run", str(path), "--agent-url", url],
        cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert time.monotonic() - began < 8.0  # not the 10 s connect timeout (plus start-up)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"evalcheck: error: the agent server cannot be used: cannot "
                                  f"connect to {url}"), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
