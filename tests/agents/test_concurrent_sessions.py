"""Concurrent sessions in one process (``"concurrent": N`` in the first ready): up to N
runs at once in one agent process, each message naming its run's session; another process
only when more runs are in flight; what one session does wrong fails that run only, what
the process does wrong (crash, hang, a line for no session) fails the runs it was serving,
named, and the process is replaced."""

from __future__ import annotations

import shlex
from collections import Counter
from pathlib import Path

from .helpers import AGENTS, PY, assert_all_gone, case
from .test_warm_workers import WARM, comparable, run_jobs, states

AGENT = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'concurrent_agent.py'))}"


def starts(log: Path) -> list[tuple[int, str, int, int]]:
    """(pid, eval id, run, sessions open in that process) of every start."""
    return [(int(pid), eval_id, int(run), int(open_)) for pid, eval_id, run, open_ in
            (line.split() for line in log.read_text().splitlines())]


def test_one_process_serves_the_runs_in_flight_at_once(tmp_path, monkeypatch):
    log = tmp_path / "agent.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    # --barrier 4: no answer until 4 sessions were started in the process, so this passes
    # only if the 4 runs in flight really share it (else every run times out).
    runs = run_jobs(tmp_path / "a", states(6), AGENT + " --concurrent 8 --barrier 4",
                    num_runs=2, concurrency=4, turn_timeout=60)
    monkeypatch.setenv("WARM_LOG", str(tmp_path / "cold.log"))
    cold = run_jobs(tmp_path / "b", states(6), WARM + " --one", num_runs=2, concurrency=2)
    assert [r.error for r in runs] == [None] * 12
    # Each run in a session of its own: its own two turns and state, as one process a run.
    assert comparable(runs) == comparable(cold)
    started = starts(log)
    assert len({pid for pid, *_ in started}) == 1 and len(started) == 12
    assert max(open_ for *_, open_ in started) == 4  # never more than --concurrency at once
    assert_all_gone([pid for pid, *_ in started])


def test_more_runs_in_flight_than_n_start_another_process(tmp_path, monkeypatch):
    log = tmp_path / "agent.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    runs = run_jobs(tmp_path, states(4), AGENT + " --concurrent 2 --barrier 2",
                    num_runs=2, concurrency=4, turn_timeout=60)
    assert [r.error for r in runs] == [None] * 8
    per_process = Counter(pid for pid, *_ in starts(log))
    assert len(per_process) == 2 and sum(per_process.values()) == 8
    assert max(open_ for *_, open_ in starts(log)) == 2


def test_a_run_that_fails_in_its_session_fails_alone(tmp_path, monkeypatch):
    log = tmp_path / "agent.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    cases = [case("ok1"), case("garbage", text="GARBAGE please"), case("ok2"),
             case("oops", text="OOPS please"), case("ok3")]
    runs = run_jobs(tmp_path, cases, AGENT, num_runs=2, concurrency=3, retries=0, turn_timeout=60)
    errors = {(r.eval_id, r.run): r.error for r in runs}
    for n in (1, 2):
        assert errors[("garbage", n)] == ("turn 1: invalid protocol message at "
                                          "$.toolUses[0].name: Field required")
        assert errors[("oops", n)] == "the agent reported an error in turn 1: model quota exceeded"
        for ok in ("ok1", "ok2", "ok3"):
            assert errors[(ok, n)] is None
    assert len({pid for pid, *_ in starts(log)}) == 1  # the process served on


def test_a_crash_fails_the_runs_of_its_process_names_them_and_is_replaced(tmp_path, monkeypatch):
    log = tmp_path / "agent.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    # --barrier 3: the crashing run and two others are in flight together when it crashes.
    cases = [case("a", turns=1), case("b", turns=1), case("crash", turns=1, text="CRASH please"),
             case("d", turns=1), case("e", turns=1), case("f", turns=1)]
    runs = run_jobs(tmp_path, cases, AGENT + " --barrier 3", num_runs=1, concurrency=3,
                    retries=0, turn_timeout=60)
    errors = {r.eval_id: r.error for r in runs}
    failed = {name for name, error in errors.items() if error}
    assert "crash" in failed and len(failed) == 3, errors
    for name in failed:
        assert errors[name].startswith("the agent exited with status 5"), errors[name]
        assert "the 3 runs it was serving failed: " in errors[name]
        for other in failed:
            assert f"set/{other} run 1" in errors[name]
    assert [errors[n] for n in "def"] == [None] * 3  # a new process served the rest
    crashed = next(r for r in runs if r.eval_id == "crash")
    assert "crashing on purpose" in (crashed.stderr_tail or "")
    pids = {pid for pid, *_ in starts(log)}
    assert len(pids) == 2
    assert_all_gone(list(pids))


def test_a_hang_fails_the_runs_of_its_process_and_it_is_killed(tmp_path, monkeypatch):
    log = tmp_path / "agent.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    cases = [case("hang", turns=1, text="HANG please"), case("b", turns=1), case("c", turns=1)]
    runs = run_jobs(tmp_path, cases, AGENT, num_runs=1, concurrency=1, retries=0,
                    turn_timeout=1.0)
    errors = {r.eval_id: r.error for r in runs}
    assert errors["hang"] == ("set/hang run 1 had no answer to turn 1 within 1 s "
                              "(--turn-timeout); the agent process was replaced, and the 1 run "
                              "it was serving failed: set/hang run 1")
    assert errors["b"] is None and errors["c"] is None
    pids = {pid for pid, *_ in starts(log)}
    assert len(pids) == 2
    assert_all_gone(list(pids))


def test_protocol_1_and_warm_agents_get_no_session_ids_but_in_start(tmp_path):
    """Agents that did not announce concurrent sessions see the messages of before (the
    start's session object has an id more)."""
    echo = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'echo_agent.py'))}"
    runs = run_jobs(tmp_path, states(2), echo, num_runs=1, concurrency=2)
    assert [r.error for r in runs] == [None] * 2


def test_the_documented_minimal_agent_works(tmp_path):
    """The Python example of docs/agent-protocol.md, as it is printed there."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "agent-protocol.md").read_text()
    section = doc[doc.index("### Concurrent sessions"):doc.index("### How many runs at once")]
    code = section[section.index("```python\n") + 10:]
    code = code[:code.index("```")]
    agent = tmp_path / "agent.py"
    agent.write_text(code)
    runs = run_jobs(tmp_path, states(4), f"{shlex.quote(PY)} {shlex.quote(str(agent))}",
                    num_runs=2, concurrency=4, turn_timeout=60)
    assert [r.error for r in runs] == [None] * 8
    assert [inv.final_response.parts[0].text for inv in runs[0].invocations] == \
        ["You said: What is the weather in Paris? (1)", "You said: What is the weather in Paris? (2)"]


def test_the_default_concurrency_fits_the_agent_and_is_printed(tmp_path, capfd, monkeypatch):
    from checker.agents.concurrency import cpus

    log = tmp_path / "agent.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    runs = run_jobs(tmp_path / "a", states(3), AGENT + " --concurrent 5 --barrier 5", num_runs=2)
    assert [r.error for r in runs] == [None] * 6  # 5 at once, else the barrier holds them
    assert len({pid for pid, *_ in starts(log)}) == 1
    assert "evalcheck: concurrency 5, adapting up to 32 (the agent serves 5 runs at once in one " \
        "process; --concurrency N fixes it)" in capfd.readouterr().err
    echo = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'echo_agent.py'))}"
    runs = run_jobs(tmp_path / "b", states(2), echo, num_runs=1)
    assert [r.error for r in runs] == [None] * 2
    n = cpus()
    assert f"evalcheck: concurrency {n}, adapting up to 32 ({n} CPU{'s' if n != 1 else ''}, a " \
        "process per run in flight; --concurrency N fixes it)" in capfd.readouterr().err
