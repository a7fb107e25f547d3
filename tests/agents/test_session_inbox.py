"""A process serving concurrent sessions cannot make the checker hold its flood: a session's
unread messages are bounded (``MAX_PENDING``); past that the process is given up and the
runs it was serving fail with the reason."""

from __future__ import annotations

import asyncio
import os
import shlex

from checker.agents.agent_process import AgentProcess
from checker.agents.base import RunJob
from checker.agents.process import spawn
from checker.agents.sessions import MAX_PENDING, SharedWorker

from .helpers import PY, case

# Writes 40 answers of 1 MiB for session s1, which never asked for them, then waits.
FLOOD = ("import json, sys, time\n"
         "line = json.dumps({'type': 'response', 'invocationId': 'inv-1', 'session': 's1',"
         " 'finalResponse': 'x' * (1 << 20)}) + '\\n'\n"
         "for _ in range(40):\n    sys.stdout.write(line); sys.stdout.flush()\n"
         "time.sleep(30)\n")


def test_a_flooded_session_gives_the_process_up_with_a_bounded_inbox():
    async def go() -> tuple[str | None, int, int]:
        proc = await spawn(f"{shlex.quote(PY)} -c {shlex.quote(FLOOD)}", cwd=None,
                           env=dict(os.environ))
        worker = SharedWorker(AgentProcess(proc, 8 << 20), 4)
        worker.join("s1", RunJob("set", case("flooded"), 1))
        inbox = worker.inboxes["s1"]
        most = 0
        for _ in range(200):  # nobody reads s1's inbox: only the bound stops it growing
            most = max(most, inbox.qsize())
            if worker.broken is not None:
                break
            await asyncio.sleep(0.02)
        try:
            return worker.broken, most, inbox.qsize()
        finally:
            worker.dispatcher.cancel()
            await worker.agent.close(0.5)

    broken, most, left = asyncio.run(go())
    assert broken == (f"the agent sent more than {MAX_PENDING} messages for set/flooded run 1 "
                      "without being asked")
    assert most <= MAX_PENDING + 1 and left <= MAX_PENDING + 1  # + the broken mark
