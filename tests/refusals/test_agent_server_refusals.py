"""An agent server's answers read for the model service's refusals (checker/agents/api_server.py):
its own 429/503 with Retry-After, @google/adk's event of a model's error in a 200, and a bare
500 from a server evalcheck did not start (whose log it cannot read: the agent's error)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest

from checker.agents.api_server import ApiServerRunner
from checker.agents.base import RunJob
from checker.models.evalset import EvalCase
from checker.models.records import RecordedRun

CASE = EvalCase.model_validate({
    "eval_id": "c", "session_input": {"app_name": "desk", "user_id": "u", "state": {}},
    "conversation": [{"user_content": {"role": "user", "parts": [{"text": "Weather in Rome?"}]}}]})


def answer(status: int, body: object, headers: str = "") -> bytes:
    data = json.dumps(body).encode()
    return (f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
            f"{headers}\r\n").encode() + data


def run_against(turn: Callable[[], bytes]) -> RecordedRun:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while line := await reader.readline():
            length = 0
            while (header := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = header.decode().partition(":")
                length = int(value) if name.lower() == "content-length" else length
            await reader.readexactly(length)
            path = line.split()[1].decode()
            if path == "/list-apps":
                writer.write(answer(200, ["desk"]))
            elif path.endswith("/sessions"):
                writer.write(answer(200, {"id": "s1"}))
            elif path == "/run":
                writer.write(turn())
            else:
                writer.write(answer(200, {}))
            await writer.drain()
        writer.close()

    async def go() -> RecordedRun:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        runner = ApiServerRunner(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}")
        try:
            await runner.start()
            return await runner.run(RunJob(eval_set_id="desk", case=CASE, run=1, turn_timeout=5))
        finally:
            await runner.aclose()
            server.close()
    return asyncio.run(go())


@pytest.mark.parametrize("status, code", [(429, "429 RESOURCE_EXHAUSTED"), (503, "503 UNAVAILABLE")])
def test_the_servers_own_refusal_with_its_retry_after(status: int, code: str) -> None:
    run = run_against(lambda: answer(status, {"detail": "slow down"}, "Retry-After: 3\r\n"))
    assert run.unavailable is not None and (run.unavailable.code, run.unavailable.retry_after) == (code, 3.0)
    assert run.error is not None and f"(the model service refused: {code})" in run.error


def test_an_adk_error_event_of_a_refused_model_call() -> None:
    run = run_against(lambda: answer(200, [{"author": "desk", "invocationId": "e-1", "errorCode": "429",
                                             "errorMessage": "Resource has been exhausted"}]))
    assert run.unavailable is not None and run.unavailable.code == "429 RESOURCE_EXHAUSTED"
    assert run.error == ("the model service refused turn 1 (429 RESOURCE_EXHAUSTED): "
                         "Resource has been exhausted")


def test_a_bare_500_of_a_server_evalcheck_did_not_start_is_the_agents_error() -> None:
    run = run_against(lambda: answer(500, "Internal Server Error"))
    assert run.unavailable is None and "HTTP 500" in (run.error or "")
