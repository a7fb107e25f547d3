"""Concurrent sessions in one agent process (the protocol addition of CONTRACT section 9).

An agent that answers its first ``start`` with ``{"type": "ready", "sessions": "many",
"concurrent": N}`` gets up to N runs at once: every message to it and from it names its
run's session id (``session.id`` in ``start``, ``"session"`` in the others), and one reader
(the dispatcher) hands each answer to the run it names.

What belongs to one run - an ``error`` for its session, an invalid answer, a wrong
invocation id - fails that run only; the agent is told ``end`` for that session and serves
the others. What cannot be pinned on one run - the process exits, a line that is not a
message, a message for no session in flight, a turn past ``--turn-timeout`` (the process
may be stuck as a whole) - gives the process up: every run it was serving fails with the
reason and the names of those runs, the process group is killed, and later runs go to
another process.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..models.refusal import ServiceRefusal
from .agent_process import AgentProcess
from .base import AgentFailure, RunJob, session_spec
from .events import ConversionError
from .protocol import (
    EOF_MARK,
    BadLine,
    ErrorMessage,
    ProtocolError,
    ResponseMessage,
    end_message,
    is_ready,
    parse_message,
    refused_turn,
    response_refusal,
    serves_any_eval_set,
    start_message,
    to_invocation,
    told_paced,
    told_refusal,
    user_message,
)
from .turns import UserTurns

_BROKEN = object()  # put in every inbox when the process is given up
# Messages of one session read but not yet taken by its run: a run has one question out
# at a time (its start or a turn), so one answer is due; a few more are allowed for an
# answer that crossed a timeout, past that the process is given up.
MAX_PENDING = 4

# (invocation id, user content, created, began, deadline) of a turn 1 already sent.
Turn1 = tuple[str, Any, float, float, float]


def run_name(job: RunJob) -> str:
    return f"{job.eval_set_id}/{job.eval_id} run {job.run}"


class SharedWorker:
    """One agent process serving up to ``capacity`` runs at once."""

    def __init__(self, agent: AgentProcess, capacity: int):
        self.agent = agent
        self.capacity = capacity
        self.inboxes: dict[str, asyncio.Queue[Any]] = {}
        self.told: dict[str, int] = {}  # refused calls each session's agent retried itself
        self.names: dict[str, str] = {}  # session id -> the run's name
        self.broken: str | None = None  # why the process was given up
        self.victims: list[str] = []  # the runs it was serving then
        self.served = 0  # runs begun in it
        self.heard: set[str] = set()  # sessions the agent has answered
        self.dispatcher = asyncio.ensure_future(self._dispatch())

    def has_room(self) -> bool:
        return (self.broken is None and not self.agent.exited.done()
                and len(self.inboxes) < self.capacity)

    def serves(self, job: RunJob) -> bool:
        return self.has_room() and self.agent.serves(job.eval_set_id)

    def idle(self) -> bool:
        return not self.inboxes

    def join(self, session_id: str, job: RunJob) -> None:
        self.inboxes[session_id] = asyncio.Queue()
        self.names[session_id] = run_name(job)
        self.served += 1

    def leave(self, session_id: str) -> None:
        self.heard.discard(session_id)
        self.inboxes.pop(session_id, None)
        self.names.pop(session_id, None)

    def give_up(self, reason: str) -> None:
        """The process cannot go on: fail every run it serves (they are woken now)."""
        if self.broken is not None:
            return
        self.broken = reason
        self.victims = list(self.names.values())
        for inbox in self.inboxes.values():
            inbox.put_nowait(_BROKEN)

    def failure(self) -> str:
        runs = ", ".join(self.victims[:8]) + (", ..." if len(self.victims) > 8 else "")
        n = len(self.victims)
        return (f"{self.broken}; the agent process was replaced, and the {n} "
                f"run{'s' if n != 1 else ''} it was serving failed: {runs}")

    async def _dispatch(self) -> None:
        agent = self.agent
        while self.broken is None:
            getter = asyncio.ensure_future(agent.messages.get())
            try:
                done, _ = await asyncio.wait({getter, agent.exited},
                                             return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:  # lines written just before exiting may be on their way
                    done, _ = await asyncio.wait({getter}, timeout=0.5)
            finally:
                getter.cancel()
            if getter not in done:
                self.give_up(f"the agent {agent.status() or 'exited'}")
                return
            item = getter.result()
            if item is EOF_MARK:
                await asyncio.wait({agent.exited}, timeout=0.5)
                self.give_up(f"the agent {agent.status() or 'closed its stdout'}")
            elif isinstance(item, BadLine):
                self.give_up(f"the agent wrote {item.reason}")
            elif (refusal := told_refusal(item)) is not None:
                # A call its model refused, which the agent retries itself: no run's answer.
                session = item.get("session")
                if isinstance(session, str) and session in self.inboxes:
                    self.told[session] = self.told.get(session, 0) + 1
                if agent.on_refusal is not None:
                    agent.on_refusal(refusal, told_paced(item))
            else:
                session = item.get("session")
                inbox = self.inboxes.get(session) if isinstance(session, str) else None
                if inbox is None:
                    what = ("without a \"session\"" if session is None
                            else f"for session {str(session)[:40]!r}, which is not in flight")
                    self.give_up(f"the agent sent a {str(item.get('type'))[:20]!r} message {what}")
                elif inbox.qsize() >= MAX_PENDING:
                    # A run asks one thing at a time; more unread answers than this is a flood
                    # (each line may be up to --max-line-bytes): never held in memory.
                    self.give_up(f"the agent sent more than {MAX_PENDING} messages for "
                                 f"{self.names[session]} without being asked")
                else:
                    self.heard.add(session)
                    inbox.put_nowait(item)

    async def _send(self, message: dict, deadline: float, what: str) -> None:
        try:
            await self.agent.send(message, deadline, what)
        except AgentFailure as exc:
            self.give_up(str(exc))
            raise AgentFailure(self.failure()) from None

    async def _receive(self, session_id: str, deadline: float, what: str, timeout: float) -> Any:
        loop = asyncio.get_running_loop()
        inbox = self.inboxes[session_id]
        try:
            item = await asyncio.wait_for(inbox.get(), max(deadline - loop.time(), 0.001))
        except TimeoutError:
            self.give_up(f"{self.names[session_id]} had no answer to {what} within "
                         f"{timeout:g} s (--turn-timeout)")
            raise AgentFailure(self.failure()) from None
        if item is _BROKEN:
            raise AgentFailure(self.failure())
        return item

    async def _end(self, session_id: str, timeout: float) -> None:
        """Tell the agent a session is over (also one whose run failed: it may drop it)."""
        loop = asyncio.get_running_loop()
        if self.broken is None:
            await self._send(end_message(session_id), loop.time() + timeout, "the end message")

    async def converse(self, job: RunJob, turns: UserTurns, session_id: str,
                       turn1: Turn1 | None = None) -> list:
        """The run's turns in session ``session_id`` (joined already); with ``turn1``, the
        run's first turn was sent before the process announced concurrent sessions.
        Raises AgentFailure when the run fails."""
        try:
            invocations = await self._converse(job, turns, session_id, turn1)
        except _RunFailure as exc:  # this run only: the process goes on with the others
            await self._end(session_id, job.turn_timeout)
            raise AgentFailure(str(exc), exc.refusal) from None
        await self._end(session_id, job.turn_timeout)
        return invocations

    async def _converse(self, job: RunJob, turns: UserTurns, session_id: str,
                        turn1: Turn1 | None) -> list:
        loop = asyncio.get_running_loop()
        timeout = job.turn_timeout
        if turn1 is None:
            spec = session_spec(job)
            deadline = loop.time() + timeout
            await self._send(start_message(eval_set_id=job.eval_set_id, eval_id=job.eval_id,
                                           run=job.run, app_name=spec.app_name,
                                           user_id=spec.user_id, state=spec.state,
                                           session_id=session_id, eval_set_path=job.eval_file,
                                           concurrent=self.agent.offered,
                                           tell_refusals=self.agent.on_refusal is not None),
                             deadline, "the start message")
            item = await self._receive(session_id, deadline, "the start message", timeout)
            if not is_ready(item):
                raise _RunFailure("the agent answered the start message with something else "
                                  "than {\"type\": \"ready\"}")
            self.agent.any_eval_set = self.agent.any_eval_set or serves_any_eval_set(item)
        invocations: list = []
        turn = 0
        while True:
            if turn1 is not None:
                invocation_id, user_content, created, began, deadline = turn1
                turn1 = None
            else:
                user_content = await turns.next(invocations)
                if user_content is None:
                    return invocations
                invocation_id = f"inv-{turn + 1}"
                created = time.time()
                began = time.perf_counter()
                deadline = loop.time() + timeout
                await self._send(user_message(invocation_id, user_content, session_id), deadline,
                                 f"turn {turn + 1}")
            turn += 1
            item = await self._receive(session_id, deadline, f"turn {turn}", timeout)
            duration = round(time.perf_counter() - began, 3)
            invocations.append(_invocation(item, turn, invocation_id, user_content, duration,
                                           created))


class _RunFailure(Exception):
    """Fails one run of a shared process, not the process (``refusal``: the model service's
    refusal, which makes the run unavailable)."""

    def __init__(self, message: str, refusal: ServiceRefusal | None = None):
        super().__init__(message)
        self.refusal = refusal


def _invocation(item: dict, turn: int, invocation_id: str, user_content: Any, duration: float,
                created: float) -> Any:
    fields = {k: v for k, v in item.items() if k != "session"}
    try:
        message = parse_message(fields)
    except ProtocolError as exc:
        raise _RunFailure(f"turn {turn}: invalid protocol message at {exc}") from None
    if isinstance(message, ErrorMessage):
        if (refusal := message.refusal()) is not None:  # the model's, not the agent's
            raise _RunFailure(refused_turn(turn, refusal), refusal)
        raise _RunFailure(f"the agent reported an error in turn {turn}: "
                          f"{message.message[:300] or '(no message)'}")
    assert isinstance(message, ResponseMessage)
    refused = response_refusal(message)
    if refused is not None:
        raise _RunFailure(refused_turn(turn, refused), refused)
    if message.invocation_id != invocation_id:
        raise _RunFailure(f"turn {turn}: the response is for invocation "
                          f"'{message.invocation_id[:60]}', expected '{invocation_id}'")
    try:
        return to_invocation(message, invocation_id, user_content, duration, created)
    except ConversionError as exc:
        raise _RunFailure(f"turn {turn}: invalid events at {exc}") from None
