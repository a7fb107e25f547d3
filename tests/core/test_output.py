"""checker/safety/output.py fuzzed against a model of the runner's command parser
(tests/core/runner_model.py): untrusted text can never become a workflow command."""

from __future__ import annotations

import io
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from checker.safety import output
from checker.safety.output import Commands, GuardedStream, clean, neutralise
from checker.safety.redact import Redactor
from runner_model import LINE_BREAKS, commands_in, parse_line, unescape_data

ATTACKS = [
    "x\n::set-output name=passed::true",
    "##[set-output name=passed;]true",
    "##[stop-commands]token",
    "::stop-commands::token",
    "ok\r::error::forged",
    "ok\u2028::error::forged",
    "ok\x85::error::forged",
    "  \t::warning::indented",
    ":\u200b:set-output name=passed::true",      # zero-width space
    "#\u200d#[set-output name=passed;]true",     # zero-width joiner
    "\ufeff::error::bom",
    "\u202e::error::bidi override",
    "\uff1a\uff1aerror\uff1a\uff1afullwidth",       # fullwidth colons
    "\uff03\uff03\uff3bset-output name=passed;\uff3dtrue",
    ":\u0301:error::combining mark",
    "\x1b[31m::error::ansi",
    ":\x1b[0m:error::ansi inside",
    "###[set-output name=passed;]x",
    ":::error:::",
    "\u2a74set-output name=x::y",                  # U+2A74 is "::=" under NFKC
]

# Text that leans towards the characters that matter.
tricky = st.text(alphabet=st.one_of(
    st.sampled_from(list(":#[] \t\n\r\x1b\x85\u2028\u2029\u200b\u200d\ufeff\u202e\u0301"
                         "\ufe0f\uff1a\uff03\uff3b\u2a74\u00ad\u034f\u3000")),
    st.characters()), max_size=60)
anything = st.one_of(tricky, st.text(max_size=60))


def guarded_log(*chunks: str, secrets=()) -> str:
    raw = io.StringIO()
    stream = GuardedStream(raw, Redactor(secrets))
    for chunk in chunks:
        stream.write(chunk)
    stream.close()
    return raw.getvalue()


@pytest.mark.parametrize("attack", ATTACKS)
def test_known_attacks_are_no_command_once_cleaned(attack):
    assert parse_line(attack) is not None or commands_in(attack)  # the model sees the attack
    line = clean(attack)
    assert not LINE_BREAKS.search(line)
    assert commands_in(line) == []
    assert commands_in("evalcheck: " + line) == []


@given(anything)
@example("x\n::set-output name=passed::true")
def test_clean_is_one_line_and_never_a_command(text):
    line = clean(text)
    assert not LINE_BREAKS.search(line)
    assert commands_in(line) == []
    assert neutralise(line) == line  # idempotent: cleaning twice changes nothing


@given(st.lists(anything, max_size=6))
def test_no_line_through_the_guarded_stream_is_a_command(chunks):
    assert commands_in(guarded_log(*chunks)) == []


@given(anything, anything)
def test_authored_commands_are_exactly_one_command_each(message, title):
    raw = io.StringIO()
    commands = Commands(GuardedStream(raw, Redactor()))
    commands.warning(message, file="a.json", line=3, title=title)
    commands.error(message)
    log = raw.getvalue()
    assert len(LINE_BREAKS.split(log.rstrip("\n"))) == 2
    found = commands_in(log)
    assert [(syntax, name) for syntax, name, _ in found] == [("v2", "warning"), ("v2", "error")]
    # The message's own lines survive (as escaped data), each of them neutralised.
    shown = unescape_data(found[1][2])
    assert all(commands_in(line) == [] for line in shown.split("\n"))


@given(anything, st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=8,
                         max_size=40))
def test_a_secret_never_reaches_the_log(text, secret):
    log = guarded_log(text + secret + "\n", f"judge said: {secret}", secrets=[secret])
    assert secret not in log


def test_a_partial_line_is_held_until_its_end():
    # ":" then ":set-output" in two writes must be checked as the one line the runner sees.
    assert commands_in(guarded_log(":", ":set-output name=passed::true\n")) == []
    assert commands_in(guarded_log("#", "#[set-output name=x;]y")) == []


def test_ordinary_text_is_left_readable():
    assert clean("expected 3 calls, got 2 (run 1)") == "expected 3 calls, got 2 (run 1)"
    assert clean("Paris — 12 °C … ✓") == "Paris — 12 °C … ✓"
    assert clean("line one\nline two") == "line one\\nline two"
    assert clean("std::vector") == "std: :vector"
    assert clean("zero\u200bwidth") == "zero\\u200bwidth"
    assert clean("x" * 50, limit=10) == "x" * 9 + "\u2026"


def test_guarded_replaces_and_restores_the_process_streams(capsys):
    before = sys.stdout, sys.stderr
    with output.guarded(["sk-planted-secret-123"]) as redactor:
        assert isinstance(sys.stdout, GuardedStream) and isinstance(sys.stderr, GuardedStream)
        with output.guarded(["another-secret-456"]):  # nested: one guard, more secrets
            assert sys.stdout.redactor is redactor
        print("::set-output name=passed::true")
        print("key sk-planted-secret-123 and another-secret-456", file=sys.stderr)
        Commands().warning("from evalcheck")
    assert (sys.stdout, sys.stderr) == before
    out = capsys.readouterr()
    assert commands_in(out.err) == []
    assert [c[:2] for c in commands_in(out.out)] == [("v2", "warning")]
    assert "secret" not in out.err and out.err.count("***") == 2


def test_cli_lines_cannot_forge_commands_or_show_secrets(tmp_path, monkeypatch):
    """Through `evalcheck run`: an eval id that tries to start a command, duplicated so the
    run stops with bad input, and a secret variable quoted in the eval file's path."""
    import json

    from click.testing import CliRunner

    from checker.cli import main

    secret = "sk-planted-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    case = {"eval_id": "x\n::set-output name=passed::true\r##[stop-commands]t",
            "conversation": [{"invocation_id": "i", "user_content": {"role": "user", "parts": [{"text": "hi"}]}}]}
    path = tmp_path / f"{secret}.evalset.json"
    path.write_text(json.dumps({"eval_set_id": "s", "eval_cases": [case, case]}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", str(path), "--agent-command", "true"])
    assert result.exit_code == 2
    log = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "x\\n: :set-output" in log and "\\r# #[stop-commands]" in log
    assert commands_in(log) == []
    assert secret not in log and "***" in log


def test_progress_lines_show_an_eval_ids_newline_as_an_escape():
    from checker.models.evalset import EvalCase
    from checker.models.records import RecordedRun
    from checker.agents.base import RunJob
    from checker.agents.schedule import Progress

    forged = "x\n::set-output name=passed::true"
    case = EvalCase.model_validate({"eval_id": forged, "conversation": [
        {"invocation_id": "i", "user_content": {"role": "user", "parts": [{"text": "hi"}]}}]})
    raw = io.StringIO()
    progress = Progress([RunJob("s", case, 1)], stream=GuardedStream(raw, Redactor()), interactive=False)
    progress.run_done(RunJob("s", case, 1), RecordedRun(eval_set_id="s", eval_id=forged, run=1,
                                                        error="boom\n##[stop-commands]t"))
    progress.close()
    (line,) = raw.getvalue().splitlines()
    assert "s/x\\n: :set-output" in line and "boom\\n# #[stop-commands]t" in line
    assert commands_in(raw.getvalue()) == []
