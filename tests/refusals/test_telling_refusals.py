"""Which failures are the model service's refusals: google-genai's own error types and words,
the protocol's ``unavailable`` field, @google/adk's error events, an agent server's answers and
log (checker/agents/service_refusal.py, server_log.py, evalcheck_adk_bridge/refusals.py)."""

from __future__ import annotations

import asyncio
import email.utils
import time

import httpx
import pytest
from google.genai import errors

from checker.agents.protocol import ProtocolError, parse_message
from checker.agents.process import OutputTail
from checker.agents.server_log import ServerLog
from checker.agents.service_refusal import (refusal_in_events, refusal_in_text, refusal_of_protocol,
                                            retry_after_header, retry_info_delay)
from evalcheck_adk_bridge.refusals import service_refusal

QUOTA = {"error": {"code": 429, "message": "You exceeded your current quota.",
                   "status": "RESOURCE_EXHAUSTED",
                   "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                "retryDelay": "2.5s"}]}}
OVERLOADED = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}


# ------------------------------------------------------------------ google-genai's words

def test_google_genais_own_error_text_is_a_refusal_with_its_retry_delay() -> None:
    found = refusal_in_text(str(errors.ClientError(429, QUOTA)))
    assert found is not None
    assert (found.kind, found.code, found.retry_after) == ("rate_limited", "429 RESOURCE_EXHAUSTED", 2.5)
    found = refusal_in_text("the agent raised ServerError: " + str(errors.ServerError(503, OVERLOADED)))
    assert found is not None and (found.kind, found.code, found.retry_after) == (
        "unavailable", "503 UNAVAILABLE", None)
    for code, name in ((500, "INTERNAL"), (504, "DEADLINE_EXCEEDED")):
        error = errors.ServerError(code, {"error": {"code": code, "message": "x", "status": name}})
        found = refusal_in_text(str(error))
        assert found is not None and found.code == f"{code} {name}"


def test_the_typescript_sdks_json_body_and_litellm_are_refusals_too() -> None:
    found = refusal_in_text('Error: {"error":{"code":429,"message":"Resource exhausted",'
                            '"status":"RESOURCE_EXHAUSTED","details":[{"@type":'
                            '"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7s"}]}}')
    assert found is not None and (found.code, found.retry_after) == ("429 RESOURCE_EXHAUSTED", 7.0)
    found = refusal_in_text("litellm.RateLimitError: RateLimitError: OpenAIException - quota")
    assert found is not None and found.code == "429 RESOURCE_EXHAUSTED"


@pytest.mark.parametrize("text", [
    "I could not find 429 hotels in Paris.",       # prose
    "400 INVALID_ARGUMENT. {'error': {'code': 400, 'status': 'INVALID_ARGUMENT'}}",
    "403 PERMISSION_DENIED. {'error': {'code': 403}}",  # setup, not a refusal
    "the tool raised KeyError: 'city'",
    "", None])
def test_other_errors_are_the_agents_own(text: str | None) -> None:
    assert refusal_in_text(text) is None


# ------------------------------------------------------------------ the protocol field

def test_the_protocols_unavailable_field_in_its_shapes() -> None:
    message = parse_message({"type": "error", "message": "quota", "invocationId": "inv-1",
                             "unavailable": {"code": "429 RESOURCE_EXHAUSTED", "retryAfter": 2}})
    found = message.refusal()
    assert found is not None and (found.kind, found.code, found.retry_after, found.message) == (
        "rate_limited", "429 RESOURCE_EXHAUSTED", 2.0, "quota")
    assert parse_message({"type": "error", "unavailable": True}).refusal().code == "unavailable"
    assert refusal_of_protocol({"code": 503}, "").code == "503 UNAVAILABLE"
    assert refusal_of_protocol({"code": "UNAVAILABLE"}, "").code == "503 UNAVAILABLE"
    assert refusal_of_protocol({"code": "connection"}, "").kind == "connection"
    # false: the agent says it was not one, whatever its message's words
    said_not = parse_message({"type": "error", "unavailable": False,
                              "message": str(errors.ClientError(429, QUOTA))})
    assert said_not.refusal() is None
    # without the field (a protocol-1 agent): its message's words decide
    assert parse_message({"type": "error", "message": str(errors.ClientError(429, QUOTA))}).refusal() \
        is not None
    assert parse_message({"type": "error", "message": "boom"}).refusal() is None


@pytest.mark.parametrize("bad", [{"retryAfter": -1}, {"code": "429", "later": 3}, "soon", 3])
def test_a_misspelt_unavailable_field_is_a_protocol_error(bad: object) -> None:
    with pytest.raises(ProtocolError, match=r"unavailable"):
        parse_message({"type": "error", "message": "x", "unavailable": bad})


def test_an_adk_error_event_with_a_refusal_code_is_a_refusal() -> None:
    found = refusal_in_events([{"author": "desk", "errorCode": "429",
                                "errorMessage": "Resource has been exhausted"}])
    assert found is not None and found.code == "429 RESOURCE_EXHAUSTED"
    assert refusal_in_events([{"errorCode": "RESOURCE_EXHAUSTED"}]).code == "429 RESOURCE_EXHAUSTED"
    # a model's answer that ended for another reason, or with content, is an answer
    assert refusal_in_events([{"errorCode": "MAX_TOKENS"}, {"errorCode": "SAFETY"}]) is None
    assert refusal_in_events([{"errorCode": "429", "content": {"parts": [{"text": "hi"}]}}]) is None


def test_retry_after_as_seconds_or_a_date_and_retry_info() -> None:
    assert retry_after_header("3") == 3.0
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (retry_after_header(later) or 0) <= 31
    assert retry_after_header("soon") is None and retry_after_header(None) is None
    assert retry_info_delay(QUOTA["error"]["details"]) == 2.5
    assert retry_info_delay([{"@type": "type.googleapis.com/google.rpc.QuotaFailure"}]) is None


# ------------------------------------------------------------------ the ADK bridge's types

def test_the_bridge_reads_google_genais_error_types() -> None:
    assert service_refusal(errors.ClientError(429, QUOTA)) == {
        "code": "429 RESOURCE_EXHAUSTED", "retryAfter": 2.5}
    assert service_refusal(errors.ServerError(503, OVERLOADED)) == {"code": "503 UNAVAILABLE"}
    from google.adk.models.google_llm import _ResourceExhaustedError

    wrapped = _ResourceExhaustedError(errors.ClientError(429, QUOTA))
    assert service_refusal(wrapped) == {"code": "429 RESOURCE_EXHAUSTED", "retryAfter": 2.5}
    # raised while handling one (the agent's own wrapper): the cause is read
    try:
        try:
            raise errors.ServerError(500, {"error": {"code": 500, "status": "INTERNAL"}})
        except errors.ServerError as exc:
            raise RuntimeError("model call failed") from exc
    except RuntimeError as outer:
        assert service_refusal(outer) == {"code": "500 INTERNAL"}


def test_the_bridge_tells_its_retry_after_header() -> None:
    response = httpx.Response(429, headers={"Retry-After": "4"})
    error = errors.ClientError(429, {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}, response)
    assert service_refusal(error) == {"code": "429 RESOURCE_EXHAUSTED", "retryAfter": 4.0}


def _raised_in(module: str, exc: BaseException) -> BaseException:
    """``exc`` raised by code of ``module`` (its frames say so, as google-genai's client's do)."""
    namespace: dict = {"__name__": module, "exc": exc}
    exec("def call():\n    raise exc\n", namespace)
    try:
        namespace["call"]()
    except BaseException as raised:  # noqa: BLE001
        return raised
    raise AssertionError("not raised")


def test_a_reset_connection_counts_only_inside_the_model_client() -> None:
    reset = _raised_in("google.genai._api_client", httpx.ReadError("Connection reset by peer"))
    assert service_refusal(reset) == {"code": "connection"}
    # the same error from a tool the agent calls is the agent's
    assert service_refusal(_raised_in("my_agent.tools", httpx.ReadError("reset"))) is None
    # a connection that could not be made at all is setup (a wrong base URL), not a refusal
    refused = _raised_in("google.genai._api_client", httpx.ConnectError("All connection attempts failed"))
    assert service_refusal(refused) is None


@pytest.mark.parametrize("error", [
    errors.ClientError(400, {"error": {"code": 400, "status": "INVALID_ARGUMENT"}}),
    errors.ClientError(403, {"error": {"code": 403, "status": "PERMISSION_DENIED"}}),
    KeyError("city"), ValueError("No API key was provided")])
def test_the_bridge_leaves_the_agents_own_errors_alone(error: BaseException) -> None:
    assert service_refusal(error) is None


# ------------------------------------------------------------------ adk api_server's log

def _record(text: str) -> bytes:
    return ("ERROR:    Exception in ASGI application\nTraceback (most recent call last):\n"
            '  File "/x/google/genai/_api_client.py", line 1, in request\n'
            f"{text}\n").encode()


def test_a_500s_log_record_tells_a_refusal_once() -> None:
    log = ServerLog(OutputTail())
    mark = log.mark()
    chained = _record("google.genai.errors.ClientError: " + str(errors.ClientError(429, QUOTA))) \
        + b"\nThe above exception was the direct cause of the following exception:\n\n" \
        + b"google.adk.models.google_llm._ResourceExhaustedError: \n429 RESOURCE_EXHAUSTED. {}\n"
    log.feed(b"INFO:     127.0.0.1:5 - \"POST /run HTTP/1.1\" 500 Internal Server Error\n" + chained
             + b"INFO:     Shutting down\n")

    async def two() -> tuple:
        return await log.refusal_since(mark), await log.refusal_since(mark)

    first, second = asyncio.run(two())
    assert first is not None and (first.code, first.retry_after) == ("429 RESOURCE_EXHAUSTED", 2.5)
    assert second is None  # one record, one refusal: never two answers excused by it


def test_a_500_of_the_agents_own_exception_and_genais_retry_lines() -> None:
    log = ServerLog(OutputTail())
    # google-genai's own retry log (the call went on) is no request's refusal
    log.feed(b"2026-01-01 10:00:00,000 - INFO - before_sleep.py:65 - Retrying in 5 s as it "
             b"raised ClientError: 429 RESOURCE_EXHAUSTED. {'error': {}}\n")
    mark = log.mark()
    log.feed(_record("KeyError: 'city'") + b"INFO:     done\n")
    assert asyncio.run(log.refusal_since(mark)) is None
    reset = ServerLog(OutputTail())
    reset.feed(_record("httpx.RemoteProtocolError: Server disconnected without sending a response."))
    found = asyncio.run(reset.refusal_since(0))
    assert found is not None and found.kind == "connection"


# ------------------------------------------------------------------ refusals an agent retries

def test_a_refused_message_tells_its_refusal_and_nothing_else_does() -> None:
    from checker.agents.protocol import start_message, told_paced, told_refusal

    found = told_refusal({"type": "refused", "session": "s1",
                          "unavailable": {"code": "429 RESOURCE_EXHAUSTED", "retryAfter": 2.0}})
    assert found is not None and (found.code, found.retry_after) == ("429 RESOURCE_EXHAUSTED", 2.0)
    # "paced": the agent paces that model's calls (the bridge): the same refusal, told so.
    paced = {"type": "refused", "session": "s1", "paced": True,
             "unavailable": {"code": "429 RESOURCE_EXHAUSTED", "retryAfter": 2.0}}
    assert told_refusal(paced) == found and told_paced(paced)
    assert not told_paced({**paced, "paced": "yes"}) and not told_paced({"type": "refused"})
    bare = told_refusal({"type": "refused"})
    assert bare is not None and bare.code == "unavailable"
    wrong = told_refusal({"type": "refused", "unavailable": {"retryAfter": -1}})
    assert wrong is not None and wrong.retry_after is None  # a bad field still tells a refusal
    assert told_refusal({"type": "response", "invocationId": "inv-1"}) is None
    assert told_refusal("not a message") is None
    start = start_message(eval_set_id="e", eval_id="c", run=1, app_name="a", user_id="u",
                          state={}, tell_refusals=True)
    assert start["tellRefusals"] is True
    assert "tellRefusals" not in start_message(eval_set_id="e", eval_id="c", run=1, app_name="a",
                                               user_id="u", state={})


# A stdio agent that retries its model itself: each turn, when asked, it tells two refusals.
RETRYING_AGENT = r'''
import json, sys, time
tell = False
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "start":
        tell = message.get("tellRefusals") is True
    elif message["type"] == "user":
        if tell:
            for _ in range(2):
                print(json.dumps({"type": "refused",
                                  "unavailable": {"code": "429 RESOURCE_EXHAUSTED", "retryAfter": 0.1}}))
        time.sleep(0.4)  # the retries' wait: the refusals of later runs come after a cut's window
        print(json.dumps({"type": "response", "invocationId": message["invocationId"],
                          "finalResponse": "It is sunny in Paris."}), flush=True)
'''


def test_refusals_an_agent_retries_itself_are_counted_on_their_runs_and_cut_the_limit(tmp_path) -> None:
    import shlex
    import sys

    from tests.refusals.service import run_evalcheck, write_evals

    (tmp_path / ".git").mkdir()
    write_evals(tmp_path / "evals", 2)
    (tmp_path / "agent.py").write_text(RETRYING_AGENT)
    # Every case asks about Paris here: the first two cities of write_evals' list are answered
    # by this agent alike, and only the counts matter.
    done = run_evalcheck(tmp_path, "http://127.0.0.1:9", "--agent-command",
                         f"{shlex.quote(sys.executable)} agent.py", "--num-runs", "3")
    assert done.results is not None, done.output
    runs = done.runs()
    assert [r.get("refusals") for r in runs] == [2] * 6 and not any(r.get("error") for r in runs)
    service = done.results["metadata"]["modelService"]
    assert (service["refusals"], service["retriedByAgents"], service["refusedRuns"]) == (12, 12, 0)
    assert service["byCode"] == {"429 RESOURCE_EXHAUSTED": 12}
    assert "the agent retries it after the delay the service asks for" in done.stderr
    concurrency = done.results["metadata"]["adaptiveConcurrency"]
    if concurrency["start"] > 1:  # one CPU: a process per run starts at 1, and stays there
        assert concurrency["lowest"] < concurrency["start"], concurrency  # the limiter heard
