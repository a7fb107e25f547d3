"""A stdio-protocol agent of its own (no ADK) serving concurrent sessions, whose model is
Gemini through google-genai's real client (GOOGLE_GEMINI_BASE_URL: the fake Gemini API). When
the model service refuses a call it says so with the protocol's ``unavailable`` field: the
code and the RetryInfo delay of google-genai's APIError (docs/agent-protocol.md). TEST ONLY.

``--no-field``: report a refusal as a protocol-1 agent would, the error's text only."""

from __future__ import annotations

import asyncio
import json
import sys

from google import genai
from google.genai import errors, types

REFUSED = (429, 500, 502, 503, 504)
FIELD = "--no-field" not in sys.argv


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def retry_delay(error: errors.APIError) -> float | None:
    body = error.details.get("error", {}) if isinstance(error.details, dict) else {}
    for item in body.get("details") or []:
        if str(item.get("@type", "")).endswith("RetryInfo"):
            return float(str(item.get("retryDelay", "0s")).rstrip("s"))
    return None


async def serve(client: genai.Client, session_id: str, inbox: asyncio.Queue) -> None:
    send({"type": "ready", "sessions": "many", "concurrent": 16, "session": session_id})
    while (message := await inbox.get())["type"] != "end":
        text = message["content"]["parts"][0]["text"]
        answer: dict = {"session": session_id, "invocationId": message["invocationId"]}
        try:
            response = await client.aio.models.generate_content(model="gemini-2.5-flash",
                                                                contents=text)
        except errors.APIError as exc:
            error = {**answer, "type": "error", "message": f"{type(exc).__name__}: {exc}"}
            if FIELD and exc.code in REFUSED:
                error["unavailable"] = {"code": f"{exc.code} {exc.status}",
                                        **({"retryAfter": d} if (d := retry_delay(exc)) is not None
                                           else {})}
            send(error)
            continue
        send({**answer, "type": "response", "finalResponse": response.text})


async def main() -> None:
    client = genai.Client(http_options=types.HttpOptions(retry_options=types.HttpRetryOptions(attempts=1)))
    loop = asyncio.get_running_loop()
    inboxes: dict[str, asyncio.Queue] = {}
    tasks = set()
    latest = None
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        message = json.loads(line)
        if message["type"] == "start":
            latest = message["session"]["id"]
            inboxes[latest] = asyncio.Queue()
            tasks.add(asyncio.create_task(serve(client, latest, inboxes[latest])))
        elif (inbox := inboxes.get(message.get("session", latest))) is not None:
            inbox.put_nowait(message)
    for inbox in inboxes.values():
        inbox.put_nowait({"type": "end"})
    await asyncio.gather(*tasks)


asyncio.run(main())
