"""Which variables hold secrets (their values are hidden in every file and log line)."""

from __future__ import annotations

import pytest

from checker.redact import Redactor, secret_values


@pytest.mark.parametrize("name", [
    "GOOGLE_API_KEY", "GITHUB_TOKEN", "OPENAI_KEY", "OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY",
    "SSH_PRIVATE_KEY", "DB_PASSWORD", "SMTP_PASSWD", "SERVICE_CREDENTIALS", "CLIENT_SECRET",
    "my-app-token", "ANTHROPIC_KEY"])
def test_named_like_a_secret(name):
    assert secret_values({name: "value-long-enough"}) == ["value-long-enough"]


@pytest.mark.parametrize("name", [
    "GOOGLE_APPLICATION_CREDENTIALS",  # a path to the credentials, not one
    "PWD", "HOME", "KEYBOARD", "MONKEY", "TOKENIZERS_PARALLELISM", "SECRETARY", "PATH",
    "INPUT_COMMENT-KEY", "INPUT_CACHE_KEY"])  # the Action's inputs are settings (audit)
def test_not_a_secret(name):
    assert secret_values({name: "/some/value"}) == []


def test_the_value_is_hidden_in_its_escaped_forms_too():
    redactor = Redactor(secret_values({"OPENAI_KEY": 'sk-"quoted"/x'}))
    assert redactor.text('{"k": "sk-\\"quoted\\"/x"} and sk-%22quoted%22%2Fx') == '{"k": "***"} and ***'


def test_the_github_token_input_stays_a_secret():
    assert secret_values({"INPUT_GITHUB-TOKEN": "ghs_0123456789"}) == ["ghs_0123456789"]
