"""The REST client and publisher against the fake GitHub (real HTTP, OpenAPI-validated)."""

from __future__ import annotations

import io

import pytest

from checker.action.github.client import GitHubClient, GitHubError, RetryPolicy
from checker.action.github.publish import (ANNOTATION_BATCH, PublishOptions, Target, marker, post_comment,
                                    publish)
from checker.action.github.workflow import Commands
from checker.models.results import Results
from github_data import realistic_results
from fake_github import Fault

SHA = "a" * 40


class Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def client_for(fake, sleeps=None, clock=None, **kw) -> GitHubClient:
    return GitHubClient(fake.token, fake.base_url, sleep=sleeps if sleeps is not None else Sleeps(),
                        clock=clock or (lambda: 1_000_000.0), **kw)


def target(pr: int | None = 7) -> Target:
    return Target(owner="octo", repo="agents", sha=SHA, pr_number=pr,
                  run_url="https://github.com/octo/agents/actions/runs/99",
                  blob_base=f"https://github.com/octo/agents/blob/{SHA}")


def run_publish(fake, results, options=None, **kw):
    out = io.StringIO()
    with client_for(fake, **kw) as client:
        outcome = publish(client, results, target(), options or PublishOptions(), Commands(out))
    return outcome, out.getvalue()


def test_first_run_creates_comment_check_run_and_no_status_by_default(fake, results):
    outcome, log = run_publish(fake, results)
    body = fake.comments[7][0]["body"]
    assert body.startswith(marker("default"))
    assert "compare\\_cities" in body and "<details>" in body
    assert outcome.comment_url == fake.comments[7][0]["html_url"]
    (run,) = fake.check_runs.values()
    assert run["head_sha"] == SHA and run["conclusion"] == "failure" and run["status"] == "completed"
    assert run["name"] == "evalcheck"
    assert run["details_url"] == "https://github.com/octo/agents/actions/runs/99"
    assert fake.statuses == []
    assert outcome.warnings == [] and "::warning" not in log


def test_sticky_comment_is_found_on_a_later_page_and_updated(fake, results):
    for i in range(230):
        fake.add_comment(7, f"human comment {i}", login=f"user{i}", user_type="User")
    old = fake.add_comment(7, marker("default") + "\nold report")
    fake.add_comment(7, marker("other") + "\nanother instance's report")
    for i in range(40):
        fake.add_comment(7, f"later comment {i}", login="someone", user_type="User")
    outcome, _ = run_publish(fake, results)
    pages = [r for r in fake.requests if r.method == "GET" and r.path.endswith("/issues/7/comments")]
    assert len(pages) == 3 and all(r.query["per_page"] == ["100"] for r in pages)
    assert [r.query.get("page", ["1"])[0] for r in pages] == ["1", "2", "3"]
    assert [(w.method, w.path) for w in fake.writes() if "comments" in w.path] == [
        ("PATCH", f"/repos/octo/agents/issues/comments/{old['id']}")]
    assert "old report" not in old["body"] and "Gate failed:" in old["body"]
    assert len(fake.comments[7]) == 272  # nothing new
    assert outcome.comment_url == old["html_url"]


def test_comment_key_keeps_instances_apart(fake, results):
    fake.add_comment(7, marker("default") + "\nfirst instance")
    run_publish(fake, results, PublishOptions(comment_key="agent-b"))
    bodies = [c["body"] for c in fake.comments[7]]
    assert bodies[0].endswith("first instance")
    assert bodies[1].startswith(marker("agent-b"))
    assert "evalcheck (agent-b)" in [r["name"] for r in fake.check_runs.values()]


def test_another_keys_report_quoting_this_keys_marker_is_not_taken_for_it(fake, results):
    """An agent's answer shown in the "weather" report (in a code block, raw) holds the
    "booking" marker: the booking instance must update its own comment, not weather's."""
    booking = fake.add_comment(7, marker("booking") + "\nold booking report")
    weather = fake.add_comment(7, marker("weather") + "\nFAILING WEATHER\n```\n"
                               + marker("booking") + "\n```")  # the newer comment
    run_publish(fake, results, PublishOptions(comment_key="booking", check_run=False))
    assert [(w.method, w.path) for w in fake.writes()] == [
        ("PATCH", f"/repos/octo/agents/issues/comments/{booking['id']}")]
    assert "FAILING WEATHER" in weather["body"]


def test_new_mode_always_adds_a_comment_and_off_mode_none(fake, results):
    fake.add_comment(7, marker("default") + "\nold")
    run_publish(fake, results, PublishOptions(comment="new", check_run=False))
    assert len(fake.comments[7]) == 2
    run_publish(fake, results, PublishOptions(comment="off", check_run=False))
    assert len(fake.comments[7]) == 2


def test_a_pasted_marker_in_a_users_comment_is_not_edited(fake, results):
    fake.add_comment(7, marker("default") + " copied by a human", login="mallory", user_type="User")
    run_publish(fake, results, PublishOptions(check_run=False))
    assert fake.comments[7][0]["body"].endswith("copied by a human")
    assert fake.comments[7][1]["body"].startswith(marker("default"))


def test_more_than_50_annotations_are_sent_in_batches(fake):
    data = realistic_results()
    case = data["evalSets"][1]["cases"][0]
    data["evalSets"][1]["cases"] = [dict(case, evalId=f"case_{i}", line=10 + i) for i in range(120)]
    data["summary"].update(cases=123, failed=121)
    results = Results.model_validate(data)
    outcome, _ = run_publish(fake, results, PublishOptions(comment="off"))
    (cid,) = fake.check_runs
    calls = [w for w in fake.writes() if "check-runs" in w.path]
    assert [c.method for c in calls] == ["POST", "PATCH", "PATCH"]
    assert [len(c.body["output"]["annotations"]) for c in calls] == [50, 50, 22]
    # Created complete, with its conclusion: a later batch that fails cannot leave it open.
    assert calls[0].body["status"] == "completed" and calls[0].body["conclusion"] == "failure"
    assert "conclusion" not in calls[1].body and "conclusion" not in calls[2].body
    assert len(fake.annotations[cid]) == 122 == outcome.annotations
    assert all(len(c.body["output"]["annotations"]) <= ANNOTATION_BATCH for c in calls)
    first = fake.annotations[cid][0]
    assert first["path"] == "agents/weather/weather.evalset.json" and first["start_line"] == 22
    assert "IN_ORDER: missing get_weather(city=\"Oslo\")" in first["message"]  # what the match lacks
    assert fake.check_runs[cid]["status"] == "completed"


def test_at_most_1000_annotations_per_check_run_and_the_title_says_how_many_were_cut(fake):
    """docs/github-action.md: one annotation per failing case, in batches of 50, up to 1,000."""
    data = realistic_results()
    case = data["evalSets"][1]["cases"][0]
    data["evalSets"][1]["cases"] = [dict(case, evalId=f"case_{i}", line=10 + i) for i in range(1100)]
    data["summary"].update(cases=1103, failed=1101)
    outcome, _ = run_publish(fake, Results.model_validate(data), PublishOptions(comment="off"))
    (cid,) = fake.check_runs
    calls = [w for w in fake.writes() if "check-runs" in w.path]
    assert [c.method for c in calls] == ["POST"] + ["PATCH"] * 19
    assert {len(c.body["output"]["annotations"]) for c in calls} == {50}
    assert len(fake.annotations[cid]) == 1000 == outcome.annotations
    assert fake.annotations[cid][-1]["start_line"] == 10 + 997  # in order: the first 1,000
    assert calls[-1].body["output"]["title"].endswith("(102 annotations not shown)")
    assert fake.check_runs[cid]["status"] == "completed"


def test_fork_pr_read_only_token_becomes_warnings_and_workflow_annotations(fake, results):
    fake.read_only = True
    outcome, log = run_publish(fake, results, PublishOptions(commit_status=True))
    assert outcome.comment_url is None and outcome.check_run_url is None
    assert len(outcome.warnings) == 3
    assert log.count("::warning::") == 3
    assert "read-only" in log and "pull_requests=write" in log
    # Without a check run, failing cases are still annotated through workflow commands.
    assert "::error file=agents/weather/weather.evalset.json,line=22,title=compare_cities%3A failed::" in log
    assert fake.token not in log


def test_5xx_is_retried_with_backoff(fake, results):
    fake.faults.append(Fault("POST", r"/issues/7/comments$", 502, times=2))
    sleeps = Sleeps()
    outcome, _ = run_publish(fake, results, PublishOptions(check_run=False), sleeps=sleeps)
    assert sleeps == [1.0, 2.0]
    assert outcome.comment_url and len(fake.comments[7]) == 1


def test_5xx_that_persists_becomes_a_warning(fake, results):
    fake.faults.append(Fault("POST", r"/check-runs$", 503, times=99))
    outcome, log = run_publish(fake, results, PublishOptions(comment="off"))
    # Each 503 may hide a created check run: it is looked for before the next try.
    posts = [r.method for r in fake.requests if r.path.endswith("/check-runs")]
    assert posts == ["POST", "GET"] * (RetryPolicy().attempts - 1) + ["POST"]
    assert "HTTP 503" in outcome.warnings[0]
    assert "::error file=" in log  # annotations fall back to workflow commands


@pytest.mark.parametrize("status", [403, 429])
def test_rate_limit_honours_retry_after(fake, results, status):
    fake.faults.append(Fault("POST", r"/issues/7/comments$", status, {"Retry-After": "7"},
                             "You have exceeded a secondary rate limit"))
    sleeps = Sleeps()
    outcome, _ = run_publish(fake, results, PublishOptions(check_run=False), sleeps=sleeps)
    assert sleeps == [7.0] and outcome.comment_url


def test_primary_rate_limit_waits_until_reset(fake, results):
    fake.faults.append(Fault("GET", r"/comments$", 403,
                             {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1000020"},
                             "API rate limit exceeded"))
    sleeps = Sleeps()
    run_publish(fake, results, PublishOptions(check_run=False), sleeps=sleeps, clock=lambda: 1_000_000.0)
    assert sleeps == [21.0]


def test_rate_limit_reset_far_away_is_not_waited_for(fake, results):
    fake.faults.append(Fault("POST", r"/check-runs$", 403,
                             {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1003600"},
                             "API rate limit exceeded"))
    sleeps = Sleeps()
    outcome, _ = run_publish(fake, results, PublishOptions(comment="off"), sleeps=sleeps)
    assert sleeps == [] and "rate limit" in outcome.warnings[0]


def test_commit_status_description_is_cut_to_140(fake):
    data = realistic_results()
    data["summary"].update(cases=123456789, failed=98765432, errored=12345678, notEvaluated=7654321)
    outcome, _ = run_publish(fake, Results.model_validate(data),
                             PublishOptions(comment="off", check_run=False, commit_status=True))
    (status,) = fake.statuses
    assert outcome.status_posted and status["state"] == "failure" and status["context"] == "evalcheck"
    assert len(status["description"]) <= 140 and status["sha"] == SHA


def test_advisory_mode_reports_neutral_and_success(fake, results):
    run_publish(fake, results, PublishOptions(comment="off", commit_status=True, gate_failed=False))
    assert next(iter(fake.check_runs.values()))["conclusion"] == "neutral"
    assert fake.statuses[0]["state"] == "success"


def test_huge_report_fits_the_comment_limit(fake):
    data = realistic_results()
    big = data["evalSets"][0]["cases"][1]
    data["evalSets"][0]["cases"] = [dict(big, evalId=f"case_{i:04d}", line=i + 1) for i in range(900)]
    results = Results.model_validate(data)
    run_publish(fake, results, PublishOptions(check_run=True))
    body = fake.comments[7][0]["body"]
    assert len(body.encode("utf-16-le")) // 2 <= 65536
    assert "Left out to fit" in body
    summary = next(iter(fake.check_runs.values()))["output"]["summary"]
    assert len(summary) <= 65535


def test_errors_never_contain_the_token(fake):
    with GitHubClient("wrong-token-value", fake.base_url, sleep=Sleeps()) as client:
        with pytest.raises(GitHubError) as info:
            post_comment(client, target(), "x", "update", "default")
    assert info.value.status == 401 and "wrong-token-value" not in str(info.value)


def test_github_enterprise_base_url_with_path(fake, results):
    fake_prefix = fake.base_url + "/api/v3"
    sent = []

    import httpx

    class Strip(httpx.HTTPTransport):
        def handle_request(self, request):
            sent.append(str(request.url))
            request.url = request.url.copy_with(path=request.url.path.removeprefix("/api/v3"))
            return super().handle_request(request)

    with GitHubClient(fake.token, fake_prefix, sleep=Sleeps(), transport=Strip()) as client:
        publish(client, results, target(), PublishOptions(check_run=False), Commands(io.StringIO()))
    assert sent and all(u.startswith(fake_prefix + "/repos/octo/agents/") for u in sent)


def test_check_run_annotations_mark_regressions_first(fake, compared):
    data = compared.model_dump(mode="json", by_alias=True)
    # a regression that still passes its threshold (5/5 -> 1/5 runs over 0.5, mean 0.55)
    passing = data["evalSets"][2]["cases"][0]
    passing.update(change="regressed")
    passing["metrics"][0].update(runs=[0.55] * 5, score=0.55, baselineScore=0.9, delta=-0.35, pValue=0.02)
    results = Results.model_validate(data)
    run_publish(fake, results)
    notes = next(iter(fake.annotations.values()))
    assert [(n["title"], n["annotation_level"]) for n in notes] == [
        ("weather_07: failed, regressed", "failure"),
        ("concierge_00: passed, regressed", "warning"),
        ("concierge_new_refund: failed", "failure")]
    assert notes[0]["message"].splitlines()[0] == (
        "regressed against the baseline: tool_trajectory_avg_score 1.00 -> 0.00 (p of the pass rate 0.05)")
    assert notes[1]["message"] == "regressed against the baseline: response_match_score 0.90 -> 0.55 (p of the pass rate 0.02)"
    assert notes[0]["start_line"] == 89 and notes[0]["path"] == "agents/weather/weather.evalset.json"
