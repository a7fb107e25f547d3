"""A stdio agent that is "the agent in folder DIR" (standard library only), as a repository
with one agent per folder would start it: ``folder_agent.py agents/$EVALCHECK_EVAL_SET_ID``.

It answers every turn with "I am <folder name>" and one call of the tool
``<folder name>_tool``, so the answers prove which agent served a run. ``--warm``: a warm
worker (``"sessions": "many"``); ``--concurrent N``: N concurrent sessions; ``--any``: it
says it serves any eval set (``"evalSets": "any"``) and takes the folder from each start
message's eval set id instead of its argument. Appends "<pid> <folder> <evalSetId>" to
$FOLDER_LOG at each start.
"""

import json
import os
import sys

args = sys.argv[1:]
warm = "--warm" in args or "--concurrent" in args
concurrent = int(args[args.index("--concurrent") + 1]) if "--concurrent" in args else None
serves_any = "--any" in args
folder = os.path.basename(os.path.normpath(args[0]))
if not os.path.isdir(args[0]):
    print(f"folder_agent: no folder {args[0]}", file=sys.stderr)
    sys.exit(3)
log = os.environ.get("FOLDER_LOG")
names = {}  # session id -> the agent folder serving it
latest = None  # the last start's session: a message without "session" is its


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    session = msg.get("session") if isinstance(msg.get("session"), str) else None
    if msg["type"] == "start":
        session = latest = msg["session"].get("id")
        name = msg["evalSetId"] if serves_any else folder
        names[session] = name
        if log:
            with open(log, "a") as f:
                f.write(f"{os.getpid()} {name} {msg['evalSetId']}\n")
        if warm:
            ready = {"type": "ready", "sessions": "many"}
            if concurrent:
                ready.update(concurrent=concurrent, session=session)
            if serves_any:
                ready["evalSets"] = "any"
            send(ready)
        continue
    if msg["type"] == "end":
        continue
    name = names.get(session or latest, folder)
    answer = {"type": "response", "invocationId": msg["invocationId"],
              "finalResponse": f"I am {name}",
              "toolUses": [{"name": f"{name}_tool", "args": {}}]}
    if concurrent:
        answer["session"] = session or latest
    send(answer)
