"""Warm workers: an agent that answers ``start`` with ``{"type": "ready", "sessions": "many"}``
serves run after run in one process; a worker that crashes, hangs or answers garbage fails
only the run it was serving, is killed with its children and replaced; protocol-1 agents
are still started once per run."""

from __future__ import annotations

import asyncio
import io
import shlex
from collections import Counter
from pathlib import Path

from checker.inputs.discover import discover
from checker.commands.stage_options import agent_options
from checker.options import RunOptions
from checker.models.evalset import EvalCase
from checker.agents.schedule import Progress, plan_jobs, run_agent_jobs
from checker.agents.stdio import StdioRunner

from .helpers import AGENTS, PY, assert_all_gone, case, write_eval_set

WARM = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'warm_agent.py'))}"


def run_jobs(tmp_path: Path, cases: list[EvalCase], command: str, **options) -> list:
    path = write_eval_set(tmp_path / "evals", "set", cases)
    targets = discover([str(path)], root=tmp_path).targets
    opts = agent_options(RunOptions(paths=[str(path)], agent_command=command, **options))
    runner = StdioRunner(command, cwd=tmp_path, kill_grace=0.5)
    progress = Progress(plan_jobs(targets, opts), stream=io.StringIO(), interactive=False)
    return asyncio.run(run_agent_jobs(targets, opts, runner=runner, progress=progress))


def starts(log: Path) -> list[tuple[int, str, int]]:
    """(pid, eval id, run) of every run start the agents logged."""
    return [(int(pid), eval_id, int(run)) for pid, eval_id, *rest in
            (line.split() for line in log.read_text().splitlines()) if eval_id != "child"
            for run in rest]


def comparable(runs: list) -> list:
    """What the agent answered, without what differs by nature (timings)."""
    return [(r.eval_id, r.run, r.error, [inv.model_dump(exclude={"creation_timestamp"}, exclude_none=True)
                                         | {"duration": None} for inv in r.invocations])
            for r in runs]


def states(n: int) -> list[EvalCase]:
    return [case(f"c{i}", turns=2, state={"user_name": f"user{i}"}) for i in range(n)]


def test_one_worker_serves_several_runs_with_the_same_invocations(tmp_path, monkeypatch):
    warm_log, cold_log = tmp_path / "warm.log", tmp_path / "cold.log"
    monkeypatch.setenv("WARM_LOG", str(warm_log))
    warm = run_jobs(tmp_path / "w", states(6), WARM, num_runs=2, concurrency=2)
    monkeypatch.setenv("WARM_LOG", str(cold_log))
    cold = run_jobs(tmp_path / "c", states(6), WARM + " --one", num_runs=2, concurrency=2)

    assert all(r.error is None for r in warm) and len(warm) == 12
    # Each run had a session of its own: two turns each, never four, and its own state.
    assert comparable(warm) == comparable(cold)
    texts = [inv.final_response.parts[0].text for r in warm for inv in r.invocations]
    assert all(t.endswith(f"(turn {1 + i % 2} of this session)") for i, t in enumerate(texts))
    assert warm[5].invocations[0].intermediate_data.invocation_events[0].content.parts[0] \
        .function_call.args == {"state": {"user_name": "user2"}}

    warm_pids = Counter(pid for pid, _, _ in starts(warm_log))
    cold_pids = Counter(pid for pid, _, _ in starts(cold_log))
    assert sum(warm_pids.values()) == 12 and len(warm_pids) <= 2  # up to --concurrency workers
    assert len(cold_pids) == 12  # protocol 1: one process per run
    assert_all_gone(list(warm_pids) + list(cold_pids))


def test_protocol_1_agent_still_gets_its_stdin_closed(tmp_path):
    """An agent without "sessions": "many" reads until EOF and exits, once per run."""
    echo = f"{shlex.quote(PY)} {shlex.quote(str(AGENTS / 'echo_agent.py'))}"
    runs = run_jobs(tmp_path, states(3), echo, num_runs=2, concurrency=2)
    assert [r.error for r in runs] == [None] * 6
    assert [len(r.invocations) for r in runs] == [2] * 6


def test_crash_hang_and_garbage_fail_only_their_run(tmp_path, monkeypatch):
    log = tmp_path / "warm.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    cases = [case("ok1"), case("crash", text="CRASH please"), case("ok2"),
             case("hang", text="HANG please"), case("ok3"), case("garbage", text="GARBAGE please"),
             case("ok4")]
    runs = run_jobs(tmp_path, cases, WARM, num_runs=2, concurrency=2, turn_timeout=1.0, retries=0)
    errors = {(r.eval_id, r.run): r.error for r in runs}
    for n in (1, 2):
        assert errors[("crash", n)] == "the agent exited with status 5 without answering turn 1"
        assert errors[("hang", n)] == "turn 1: no answer within 1 s (--turn-timeout)"
        assert errors[("garbage", n)] == ("turn 1: invalid protocol message at "
                                          "$.toolUses[0].name: Field required")
        for ok in ("ok1", "ok2", "ok3", "ok4"):
            assert errors[(ok, n)] is None, (ok, n)
    crashed = next(r for r in runs if r.eval_id == "crash")
    assert crashed.stderr_tail == "warm agent: crashing on purpose"  # its own log, not older runs'
    # Every failed run's worker was replaced: 6 failed runs, so at least 7 processes in all,
    # each of which served runs only until its failure.
    started = starts(log)
    by_pid: dict[int, list[str]] = {}
    for pid, eval_id, _ in started:
        by_pid.setdefault(pid, []).append(eval_id)
    assert len(by_pid) >= 7
    for served in by_pid.values():
        bad = [i for i, e in enumerate(served) if not e.startswith("ok")]
        assert not bad or bad == [len(served) - 1], served  # a failed run is a worker's last
    children = [int(line.split()[0]) for line in log.read_text().splitlines() if "child" in line]
    assert len(children) == 2
    assert_all_gone(list(by_pid) + children)


def test_a_worker_that_dies_between_runs_is_replaced(tmp_path, monkeypatch):
    """Exiting after ``end`` is no error: the next run gets a new worker."""
    log = tmp_path / "warm.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    runs = run_jobs(tmp_path, states(3), WARM + " --exit-after-end", num_runs=1, concurrency=1)
    assert [r.error for r in runs] == [None] * 3
    assert len({pid for pid, _, _ in starts(log)}) == 3


def test_a_worker_that_speaks_between_runs_is_replaced(tmp_path, monkeypatch):
    """A message with no run in progress never lands in the next run: that worker goes."""
    log = tmp_path / "warm.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    runs = run_jobs(tmp_path, states(3), WARM + " --stray-after-end", num_runs=2, concurrency=1)
    assert [r.error for r in runs] == [None] * 6
    texts = [inv.final_response.parts[0].text for r in runs for inv in r.invocations]
    assert "late" not in texts
    pids = [pid for pid, _, _ in starts(log)]
    assert len(set(pids)) == 6  # every worker served one run only
    assert_all_gone(pids)


def test_stderr_a_worker_prints_after_a_run_is_not_the_next_runs(tmp_path, monkeypatch):
    """Issue 22: a warm worker's late log of one run landed in the next run's stderr tail
    (shown in the results and the comment). What it prints before the next run's ready is
    dropped, with a note; a failing run's tail is its own."""
    log = tmp_path / "warm.log"
    monkeypatch.setenv("WARM_LOG", str(log))
    cases = [case("ok1"), case("ok2"), case("crash", text="CRASH please")]
    runs = run_jobs(tmp_path, cases, WARM + " --log-after-end", num_runs=1, concurrency=1, retries=0)
    crashed = next(r for r in runs if r.eval_id == "crash")
    assert crashed.error is not None
    assert "late log of the run before" not in (crashed.stderr_tail or ""), crashed.stderr_tail
    assert crashed.stderr_tail.endswith("warm agent: crashing on purpose"), crashed.stderr_tail
    assert "bytes of stderr printed between runs, not shown" in crashed.stderr_tail
