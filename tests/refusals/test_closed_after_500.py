"""adk api_server answers a turn whose model call raised with HTTP 500 and then closes the
connection, without a ``Connection: close``: the next request of a run must not go on it
(checker/agents/http_client.py), or the run would fail on a connection the server closed."""

from __future__ import annotations

import asyncio

from checker.agents.http_client import LoopbackClient

INTERNAL = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 21\r\n\r\nInternal Server Error"
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]"


def test_a_connection_is_not_reused_after_a_500() -> None:
    connections = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        try:
            while line := await reader.readline():
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass  # (the requests here have no body)
                if b"/fails" in line:
                    writer.write(INTERNAL)
                    await writer.drain()
                    await asyncio.sleep(0.05)  # uvicorn: the exception is handled, then closed
                    return
                writer.write(OK)
                await writer.drain()
        finally:
            writer.close()

    async def go() -> tuple[int, int]:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        http = LoopbackClient(url, max_connections=4, timeout=5.0)
        try:
            first = await http.request("GET", "/fails")
            second = await http.request("GET", "/next")  # at once, as a run's next request
            return first.status_code, second.status_code
        finally:
            await http.aclose()
            server.close()

    assert asyncio.run(go()) == (500, 200)
    assert len(connections) == 2  # the next request went on a connection of its own
