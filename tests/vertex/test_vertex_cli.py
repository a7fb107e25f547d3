"""``evalcheck run --replay`` with Vertex AI criteria, end to end against the fake service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fake_vertex import FakeVertex

from checker.cli import main


def invocation(n: int, query: str, answer: str) -> dict[str, Any]:
    return {"invocation_id": f"inv-{n}",
            "user_content": {"role": "user", "parts": [{"text": query}]},
            "final_response": {"role": "model", "parts": [{"text": answer}]}}


def test_replay_scores_and_gates_on_vertex_metrics(express: FakeVertex, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    conversation = [invocation(1, "Weather in Paris?", "Sunny."), invocation(2, "Tomorrow?", "Rain.")]
    (tmp_path / "w.evalset.json").write_text(json.dumps({"eval_set_id": "w", "eval_cases": [
        {"eval_id": "good", "conversation": conversation},
        {"eval_id": "bad", "conversation": conversation}]}))
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {
        "safety_v1": 1.0, "response_evaluation_score": 4, "multi_turn_task_success_v1": 0.5}}))
    bad = [invocation(1, "Weather in Paris?", "UNSAFE"), invocation(2, "Tomorrow?", "FAIL")]
    runs = [{"evalSetId": "w", "evalId": "good", "run": 1, "invocations": conversation},
            {"evalSetId": "w", "evalId": "bad", "run": 1, "invocations": bad}]
    (tmp_path / "runs.json").write_text(json.dumps({"version": 1, "runs": runs}))
    monkeypatch.chdir(tmp_path)

    outcome = CliRunner().invoke(main, ["run", "--replay", "runs.json", "--results", "out.json",
                                        "--markdown", "out.md", "."])

    assert outcome.exit_code == 1, outcome.output
    results = json.loads((tmp_path / "out.json").read_text())
    cases = {c["evalId"]: c for c in results["evalSets"][0]["cases"]}
    good = {m["name"]: m for m in cases["good"]["metrics"]}
    assert cases["good"]["status"] == "passed"
    assert good["safety_v1"]["score"] == 1.0
    assert good["response_evaluation_score"]["score"] == 5.0
    assert good["multi_turn_task_success_v1"]["score"] == 1.0
    assert good["multi_turn_task_success_v1"]["details"]["backend"] == "vertex-ai-express-mode"
    bad_metrics = {m["name"]: m for m in cases["bad"]["metrics"]}
    assert cases["bad"]["status"] == "failed"
    assert bad_metrics["safety_v1"]["score"] == 0.5 and bad_metrics["safety_v1"]["status"] == "failed"
    assert bad_metrics["multi_turn_task_success_v1"]["score"] == 0.5
    # 2 invocations x 2 single-turn metrics + 1 conversation request, per case run.
    assert len(express.requests) == 2 * (2 * 2 + 1)
    # The service's answers carry no usage: instances are counted, no judge token, no cost.
    for case in cases.values():
        assert case["runs"][0]["usage"] == {"vertexInstances": 5} == case["usage"]
    assert results["summary"]["usage"] == {"vertexInstances": 10}
    assert "tokens: none reported; Vertex AI evaluation: 10 instances, tokens not reported" \
        in (tmp_path / "out.md").read_text()


def test_the_vertex_answer_has_no_usage_field_to_record() -> None:
    """What the docs say (docs/cost.md): EvaluateInstancesResponse, in aiplatform's v1 and
    v1beta1 protos and in the client's own types, has result fields only. If a release adds
    usage, this fails: record it then instead of counting instances."""
    from agentplatform._genai.types import common
    from google.cloud.aiplatform_v1.types import evaluation_service as v1
    from google.cloud.aiplatform_v1beta1.types import evaluation_service as v1beta1

    names = [*common.EvaluateInstancesResponse.model_fields, *common.MetricResult.model_fields,
             *(f.name for m in (v1, v1beta1) for f in m.EvaluateInstancesResponse.pb().DESCRIPTOR.fields),
             *(f.name for f in v1beta1.MetricResult.pb().DESCRIPTOR.fields)]
    assert "metric_results" in names and "safety_result" in names
    assert not [n for n in names if "usage" in n or "token" in n]


def _run_with_echoed_bearer(fake: FakeVertex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            conversation: list[dict[str, Any]], *options: str) -> dict[str, str]:
    """Score ``conversation`` (one case) with safety_v1 while the service answers every
    request with an error that echoes its bearer token; the files written and the output."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "w.evalset.json").write_text(json.dumps({"eval_set_id": "w", "eval_cases": [
        {"eval_id": "good", "conversation": conversation}]}))
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"safety_v1": 1.0}}))
    (tmp_path / "runs.json").write_text(json.dumps({"version": 1, "runs": [
        {"evalSetId": "w", "evalId": "good", "run": 1, "invocations": conversation}]}))
    fake.fail(400, times=len(conversation), message="cannot use Authorization: {authorization} here")
    monkeypatch.chdir(tmp_path)

    outcome = CliRunner().invoke(main, ["run", "--replay", "runs.json", "--results", "out.json",
                                        "--markdown", "report.md", "--junit", "junit.xml",
                                        *options, "."])

    assert outcome.exit_code == 1, outcome.output
    written = {name: (tmp_path / name).read_text() for name in ("out.json", "report.md", "junit.xml")}
    assert "cannot use Authorization: Bearer ***" in written["out.json"]  # the error is kept
    return {**written, "output": outcome.output}


def test_an_access_token_echoed_by_vertex_reaches_no_file_and_no_log(
        project: FakeVertex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Application default credentials: the bearer token evalcheck's client sent is redacted
    like an API key when the service echoes it in an error body (it is in no variable)."""
    texts = _run_with_echoed_bearer(project, tmp_path, monkeypatch,
                                    [invocation(1, "Weather in Paris?", "Sunny.")])
    for text in texts.values():
        assert project.token not in text


def test_every_refreshed_access_token_is_redacted_not_only_the_last(
        project: FakeVertex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long job outlives an access token: each request here is sent with a new one (the
    token endpoint issues tokens already inside google-auth's refresh margin). Every token
    the service echoes is redacted, the ones replaced since as well as the last."""
    # A service account (an authorized-user file always refreshes at Google's own endpoint).
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    Path(project.adc_file).write_text(json.dumps({
        "type": "service_account", "project_id": "my-project", "private_key_id": "k1",
        "private_key": key, "client_email": "evalcheck@my-project.iam.gserviceaccount.com",
        "client_id": "1", "token_uri": project.token_uri}))
    conversation = [invocation(n, f"Question {n}?", f"Answer {n}.") for n in (1, 2, 3)]

    # One request at a time, so each is sent with its own token.
    texts = _run_with_echoed_bearer(project, tmp_path, monkeypatch, conversation,
                                    "--judge-concurrency", "1")

    sent = [r.headers["authorization"] for r in project.requests]
    assert len(set(sent)) == 3, sent  # a refresh before each request
    for text in texts.values():
        for token in (project.token, *project.issued):
            assert token not in text
