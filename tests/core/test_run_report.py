"""What ``evalcheck run`` says about itself: ``Results.metadata``, the report footer, and a
terminal log that stays one line per case however many cases there are."""

from __future__ import annotations

import json
import platform
import shlex
from datetime import datetime, timedelta, timezone
from pathlib import Path

from checker.options import RunOptions
from checker.commands.stage_options import metadata_options
from checker.scoring.metadata import run_metadata
from corehelpers import case, evalset, invocation, replay, run_cli, write_json


def test_results_metadata_describes_the_run(repo):
    write_json(repo / "e/s.evalset.json", evalset("s", case("a"), case("b")))
    write_json(repo / "e/test_config.json", {"criteria": {"response_match_score": 0.8}})
    write_json(repo / "runs.json", replay(("s", "a", 1, [invocation()]), ("s", "a", 2, [invocation()]),
                                          ("s", "b", 1, [invocation()])))
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "r.json", "--markdown", "r.md"], repo)
    assert out.code == 0, out.output
    meta = json.loads((repo / "r.json").read_text())["metadata"]
    assert set(meta) == {"evalcheckVersion", "mode", "numRuns", "concurrency", "startedAt",
                         "finishedAt", "durationSeconds", "pythonVersion", "evalPaths"}
    assert meta["evalPaths"] == ["e"]  # what it was given, from the repository root
    assert (meta["mode"], meta["numRuns"], meta["concurrency"]) == ("replay", 2, None)
    assert meta["pythonVersion"] == platform.python_version()
    started = datetime.fromisoformat(meta["startedAt"].replace("Z", "+00:00"))
    finished = datetime.fromisoformat(meta["finishedAt"].replace("Z", "+00:00"))
    assert meta["startedAt"].endswith("Z") and started <= finished
    assert 0 <= meta["durationSeconds"] <= (finished - started).total_seconds() + 1
    from importlib.metadata import version

    assert meta["evalcheckVersion"] == version("evalcheck-adk")
    footer = (repo / "r.md").read_text().strip().splitlines()[-1]
    assert footer.startswith(f"<sub>evalcheck {version('evalcheck-adk')} · ") and " s" in footer
    assert "judge" not in footer  # no judge scored this run
    assert f" in {meta['durationSeconds']:.1f} s: " in out.stdout  # the summary line too


def test_metadata_of_agent_modes():
    start = datetime(2026, 1, 2, 4, 4, 5, tzinfo=timezone(timedelta(hours=1)))
    for options, mode in ((RunOptions(agent_command="x", num_runs=3, concurrency=7), "stdio"),
                          (RunOptions(agent_url="http://localhost:8000", num_runs=1), "api")):
        meta = run_metadata(metadata_options(options), {}, start, start + timedelta(seconds=90), 1.23456)
        assert (meta["mode"], meta["numRuns"], meta["concurrency"]) == (
            mode, options.num_runs, options.concurrency)
        assert (meta["startedAt"], meta["finishedAt"]) == ("2026-01-02T03:04:05Z", "2026-01-02T03:05:35Z")
        assert meta["durationSeconds"] == 1.235


AGENT = r"""
while IFS= read -r line; do
  case "$line" in
    *'"type":"user"'*)
      case "$EVALCHECK_EVAL_ID" in
        bad*) answer="Rain in Rome, says the agent.";;
        *) answer="ok";;
      esac
      printf '{"type":"response","invocationId":"inv-1","finalResponse":"%s"}\n' "$answer";;
  esac
done
"""


def test_terminal_output_stays_compact_for_many_cases(repo, monkeypatch):
    """52 cases, 2 failing: one progress line per case (CI log), one line per failing metric,
    one summary line; nothing else about the passing cases."""
    cases = [case(f"good_{n:02d}") for n in range(50)] + [case("bad_1"), case("bad_2")]
    write_json(repo / "e/s.evalset.json", evalset("s", *cases))
    (repo / "agent.sh").write_text(AGENT)
    monkeypatch.setenv("CI", "true")
    out = run_cli(["run", "e", "--agent-command", f"/bin/sh {shlex.quote(str(repo / 'agent.sh'))}",
                   "--num-runs", "1", "--concurrency", "4"], repo)
    assert out.code == 1, out.output
    stdout = out.stdout.strip().splitlines()
    assert stdout[:-2] == [f"e/s.evalset.json:{line} {name}: response_match_score 0.00 < 0.80"
                           for name, line in _lines(repo, "bad_1", "bad_2")]
    assert stdout[-2].startswith("52 eval cases in 1 eval set in ")
    assert stdout[-2].endswith(": 50 passed, 2 failed, 0 errored")
    assert stdout[-1] == "gate failed (fail-on: failure): 2 of 52 cases did not pass"
    progress = [ln for ln in out.stderr.strip().splitlines() if not ln.startswith("evalcheck: warning: ")]
    assert len(progress) == 52 and all(p.endswith(": 1 run done") for p in progress)


def _lines(repo: Path, *ids: str) -> list[tuple[str, int]]:
    text = (repo / "e/s.evalset.json").read_text().splitlines()
    return [(i, next(n for n, line in enumerate(text, 1) if f'"{i}"' in line)) for i in ids]


def test_settings_read_but_not_acted_on_are_warned_about(repo):
    """ADK's Live and audio settings load (ADK files stay valid) but are said to do nothing:
    on stderr, in the results metadata and in the report, never silently."""
    write_json(repo / "e/s.evalset.json", evalset("s", case("a")))
    write_json(repo / "e/test_config.json", {
        "criteria": {"response_match_score": 0.5}, "live_model_config": {"speech_config": {}},
        "user_simulator_config": {"type": "llm_audio"}})
    write_json(repo / "runs.json", replay(("s", "a", 1, [invocation()])))
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "r.json", "--markdown", "r.md"], repo)
    assert out.code == 0, out.output
    live = ("e/test_config.json: $.live_model_config: Live (bidi-streaming) inference is not "
            "supported; agents get text turns and this setting has no effect")
    audio = "e/test_config.json: $.user_simulator_config.type: the audio user simulator is not supported"
    assert f"evalcheck: warning: {live}" in out.stderr
    assert audio in out.stderr
    warnings = json.loads((repo / "r.json").read_text())["metadata"]["warnings"]
    assert warnings[0] == live and warnings[1].startswith(audio) and len(warnings) == 2
    report = (repo / "r.md").read_text()
    assert "> [!WARNING]\n> - e/test\\_config.json: $.live\\_model\\_config: Live" in report


def test_no_warning_for_supported_settings(repo):
    write_json(repo / "e/s.evalset.json", evalset("s", case("a")))
    write_json(repo / "e/test_config.json", {"criteria": {"response_match_score": 0.5},
                                             "user_simulator_config": {"type": "llm_backed"}})
    write_json(repo / "runs.json", replay(("s", "a", 1, [invocation()])))
    out = run_cli(["run", "e", "--replay", "runs.json", "--results", "r.json", "--markdown", "r.md"], repo)
    assert out.code == 0 and "warning" not in out.stderr
    assert "warnings" not in json.loads((repo / "r.json").read_text())["metadata"]
    assert "[!WARNING]" not in (repo / "r.md").read_text()
