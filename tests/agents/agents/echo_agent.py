"""A well-behaved stdio agent for the scheduling tests (standard library only).

Answers each turn with "echo: <text>" plus one tool use, after sleeping $ECHO_SLEEP
seconds; appends "<eval id> <run> <start> <end>" to $ECHO_LOG per turn when set.
"""

import json
import os
import sys
import time

delay = float(os.environ.get("ECHO_SLEEP", "0"))
log = os.environ.get("ECHO_LOG")
state = {}
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "start":
        state = msg["session"]["state"]
        continue
    began = time.time()
    time.sleep(delay)
    text = " ".join(p.get("text", "") for p in msg["content"]["parts"])
    if log:
        with open(log, "a") as f:
            f.write(f"{os.environ['EVALCHECK_EVAL_ID']} {os.environ['EVALCHECK_RUN']} {began} {time.time()}\n")
    sys.stdout.write(json.dumps({
        "type": "response", "invocationId": msg["invocationId"],
        "finalResponse": f"echo: {text}",
        "toolUses": [{"name": "lookup", "args": {"q": text, "user": state.get("user_name")}}],
        "usage": {"promptTokenCount": 10, "candidatesTokenCount": 3}}) + "\n")
    sys.stdout.flush()
