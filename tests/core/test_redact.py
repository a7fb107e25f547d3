"""Which variables hold secrets (their values are hidden in every file and log line)."""

from __future__ import annotations

import pytest

from checker.safety.redact import Redactor, secret_values


@pytest.mark.parametrize("name", [
    "GOOGLE_API_KEY", "GITHUB_TOKEN", "OPENAI_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY",
    "SSH_PRIVATE_KEY", "DB_PASSWORD", "SMTP_PASSWD", "SERVICE_CREDENTIALS", "CLIENT_SECRET",
    "my-app-token", "ANTHROPIC_KEY"])
def test_named_like_a_secret(name):
    assert secret_values({name: "value-long-enough"}) == ["value-long-enough"]


@pytest.mark.parametrize("name", [
    "GOOGLE_APPLICATION_CREDENTIALS",  # a path to the credentials, not one
    "PWD", "HOME", "KEYBOARD", "MONKEY", "TOKENIZERS_PARALLELISM", "SECRETARY", "PATH",
    "INPUT_COMMENT-KEY", "INPUT_CACHE_KEY",  # the Action's inputs are settings (audit)
    "comment-key"])  # the same input as nektos/act passes it too, under its bare name
def test_not_a_secret(name):
    assert secret_values({name: "/some/value"}) == []


def test_the_value_is_hidden_in_its_escaped_forms_too():
    redactor = Redactor(secret_values({"OPENAI_KEY": 'sk-"quoted"/x'}))
    assert redactor.text('{"k": "sk-\\"quoted\\"/x"} and sk-%22quoted%22%2Fx') == '{"k": "***"} and ***'


def test_the_github_token_input_stays_a_secret():
    assert secret_values({"INPUT_GITHUB-TOKEN": "ghs_0123456789"}) == ["ghs_0123456789"]


def test_a_piece_of_a_secret_left_by_a_cut_is_hidden_and_only_there():
    secret = "AIzaPLANTED-secret-key_0123456789abcdef"
    redactor = Redactor([secret])
    assert redactor.text("error: xx" + secret[:20] + "\u2026") == "error: xx***\u2026"   # clipped line
    assert redactor.text(secret[-20:] + "\nnext line") == "***\nnext line"            # tail's start
    assert redactor.text("a\n\u2026" + secret[-12:] + " b") == "a\n\u2026*** b"        # a cut line
    assert redactor.text(secret[:7] + "\u2026") == secret[:7] + "\u2026"               # too short to tell
    middle = "quoted " + secret[5:25] + " in the middle"                               # not at a cut
    assert redactor.text(middle) == middle


def test_a_secret_in_another_case_is_hidden_too():
    redactor = Redactor(["sk-AbCdEf0123456789"])
    assert redactor.text("key SK-abcdef0123456789 and sK-aBcDeF0123456789") == "key *** and ***"
