"""A warm-worker stdio agent for the runner tests (standard library only).

Answers ``start`` with ``{"type": "ready", "sessions": "many"}`` (``--one``: a plain
``ready``, so the checker starts it once per run; ``--exit-after-end``: it exits after
each run; ``--stray-after-end``: it answers ``end`` with a stray response; ``--log-after-end``: it
logs to stderr on ``end``), then each turn with "echo: <text>",
the number of turns its session has seen and the session's state, and counts the runs it
served. Appends "<pid> <eval id> <run>" to $WARM_LOG at each start. A user text containing
CRASH exits, HANG starts a child and sleeps, GARBAGE answers an invalid message.
"""

import json
import os
import subprocess
import sys
import time

many = "--one" not in sys.argv
exit_after_end = "--exit-after-end" in sys.argv  # a worker that quits between runs
stray_after_end = "--stray-after-end" in sys.argv  # one that speaks with no run
log_after_end = "--log-after-end" in sys.argv  # one that logs to stderr once a run ended
log = os.environ.get("WARM_LOG")
runs_served = 0
session = None


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "start":
        runs_served += 1
        if log:
            with open(log, "a") as f:
                f.write(f"{os.getpid()} {msg['evalId']} {msg['run']}\n")
        session = {"state": msg["session"]["state"], "turns": 0}
        send({"type": "ready", "sessions": "many"} if many else {"type": "ready"})
        continue
    if msg["type"] == "end":
        if exit_after_end:
            break
        if stray_after_end:
            send({"type": "response", "invocationId": "inv-1", "finalResponse": "late"})
        if log_after_end:
            print(f"late log of the run before (served {runs_served})", file=sys.stderr, flush=True)
        continue
    text = " ".join(p.get("text", "") for p in msg["content"]["parts"])
    if "CRASH" in text:
        print("warm agent: crashing on purpose", file=sys.stderr)
        sys.exit(5)
    if "HANG" in text:
        child = subprocess.Popen(["sleep", "300"])
        if log:
            with open(log, "a") as f:
                f.write(f"{child.pid} child\n")
        time.sleep(300)
    if "GARBAGE" in text:
        send({"type": "response", "invocationId": msg["invocationId"], "toolUses": [{}]})
        continue
    session["turns"] += 1
    send({"type": "response", "invocationId": msg["invocationId"],
          "finalResponse": f"echo: {text} (turn {session['turns']} of this session)",
          "toolUses": [{"name": "lookup", "args": {"state": session["state"]}}]})
