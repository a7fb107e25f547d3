"""A stdio agent serving concurrent sessions in one process (standard library only).

Answers its first ``start`` with ``{"type": "ready", "sessions": "many", "concurrent": N}``
(``--concurrent N``, default 4) and every start with a ready naming the session; each turn
with "echo: <text> (turn k of this session)" and the session's state as a tool call.
``--barrier K``: holds every answer to a turn until K sessions have sent a turn to this
process, so a run passes only when K runs really were in flight in it at once. Appends
"<pid> <eval id> <run> <sessions open>" to $WARM_LOG at each start. A user text containing
CRASH exits, HANG sleeps (the whole process), GARBAGE answers an invalid message for its
session, OOPS sends an error for its session. ``--wait S``: each turn's answer comes S
seconds later (a thread sleeps: an agent waiting on a model); ``--spin S``: S seconds of
computing before each answer (an agent on CPU).
"""

import json
import os
import sys
import threading
import time

args = sys.argv[1:]
concurrent = int(args[args.index("--concurrent") + 1]) if "--concurrent" in args else 4
barrier = int(args[args.index("--barrier") + 1]) if "--barrier" in args else 0
wait = float(args[args.index("--wait") + 1]) if "--wait" in args else 0.0
spin = float(args[args.index("--spin") + 1]) if "--spin" in args else 0.0
log = os.environ.get("WARM_LOG")
out = threading.Lock()
sessions = {}  # session id -> {"state", "turns"}
started = 0
asked = set()  # sessions that sent a turn
held = []  # answers waiting for the barrier
latest = None  # the session of the last start: a message without "session" is its


def send(obj):
    if len(asked) < barrier and obj["type"] != "ready":
        held.append(obj)
        return
    with out:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "start":
        latest = msg["session"]["id"]
        sessions[latest] = {"state": msg["session"]["state"], "turns": 0}
        started += 1
        if log:
            with open(log, "a") as f:
                f.write(f"{os.getpid()} {msg['evalId']} {msg['run']} {len(sessions)}\n")
        send({"type": "ready", "sessions": "many", "concurrent": concurrent, "session": latest})
        continue
    sid = msg.get("session", latest)
    if msg["type"] == "end":
        sessions.pop(sid, None)
        continue
    session = sessions[sid]
    asked.add(sid)
    text = " ".join(p.get("text", "") for p in msg["content"]["parts"])
    if "CRASH" in text:
        print("concurrent agent: crashing on purpose", file=sys.stderr, flush=True)
        sys.exit(5)
    if "HANG" in text:
        time.sleep(300)
    if "GARBAGE" in text:
        send({"type": "response", "invocationId": msg["invocationId"], "session": sid,
              "toolUses": [{}]})
    if "OOPS" in text:
        send({"type": "error", "message": "model quota exceeded", "session": sid})
    if "GARBAGE" not in text and "OOPS" not in text:
        session["turns"] += 1
        end = time.monotonic() + spin
        while time.monotonic() < end:
            pass
        answer = {"type": "response", "invocationId": msg["invocationId"], "session": sid,
                  "finalResponse": f"echo: {text} (turn {session['turns']} of this session)",
                  "toolUses": [{"name": "lookup", "args": {"state": session["state"]}}]}
        if wait:
            threading.Timer(wait, send, (answer,)).start()
        else:
            send(answer)
    if len(asked) >= barrier and held:
        flush, held = held, []
        for obj in flush:
            send(obj)
