"""A count option given something that is not one (``--num-runs three``) is bad input said in
one line with what is expected, exit status 2: not click's "not a valid integer range"."""

from __future__ import annotations

import subprocess
import sys

import pytest


def evalcheck_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from checker.cli import main; main()", "run",
                           "evals", "--replay", "runs.json", *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("args", "message"), [
    (("--num-runs", "three"), "--num-runs: 'three' is not a number of runs; give a whole number 1-100"),
    (("--num-runs", "2.5"), "--num-runs: '2.5' is not a number of runs; give a whole number 1-100"),
    (("--num-runs", "0"), "--num-runs: 0 is not a number of runs; give a whole number 1-100"),
    (("--confirm-runs", "-1"), "--confirm-runs: -1 is not a number of runs; give a whole number 0-100"),
    (("--max-runs", "many"), "--max-runs: 'many' is not a number of runs; give a whole number 1-100"),
    (("--retries", "9"), "--retries: 9 is not a number of retries; give a whole number 0-5"),
    (("--concurrency", "x"), "--concurrency: 'x' is not a number of runs in flight; give a whole "
                             "number of at least 1"),
])
def test_a_count_that_is_not_one_says_what_is_expected(args, message):
    done = evalcheck_run(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"evalcheck: error: {message}\n"
    assert done.stdout == ""


def test_a_count_above_the_most_keeps_its_own_advice():
    done = evalcheck_run("--num-runs", "200")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("evalcheck: error: num-runs is 200, above the maximum of 100 ")
    assert "docs/limits.md" in done.stderr
