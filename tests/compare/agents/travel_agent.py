"""A warm stdio agent for issue 40's new-user scenario (standard library only): a travel
assistant whose case ``lisbon_usd`` should call ``currency_agent``. On main
($TRAVEL_BREAK unset) it calls ``book_hotel`` instead in run 2 of every case's runs (main
called it in 2 of 3 runs); with $TRAVEL_BREAK=1 (the branch that breaks one behaviour) it
calls ``book_hotel`` in every run. Every other case calls its expected tool, except
``porto_flaky``, right with probability 0.8 drawn from random.Random("<seed>:<run>")
($TRAVEL_SEED). Run numbers keep growing through confirmation runs: each is a fresh draw.
Appends "<eval id> <run>" to $TRAVEL_LOG per turn when set.
"""

import json
import os
import random
import sys

broken = os.environ.get("TRAVEL_BREAK") == "1"
seed = os.environ.get("TRAVEL_SEED", "0")
log = os.environ.get("TRAVEL_LOG")
eval_id, run = "", 0
EXPECTED = {"lisbon_usd": "currency_agent"}


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "start":
        eval_id, run = msg["evalId"], int(msg["run"])
        send({"type": "ready", "sessions": "many"})
        continue
    if msg["type"] == "end":
        continue
    tool = EXPECTED.get(eval_id, "get_forecast")
    if eval_id == "lisbon_usd" and (broken or run == 2):
        tool = "book_hotel"
    if eval_id == "porto_flaky" and random.Random(f"{seed}:{run}").random() >= 0.8:
        tool = "find_hotels"
    if log:
        with open(log, "a") as f:
            f.write(f"{eval_id} {run}\n")
    send({"type": "response", "invocationId": msg["invocationId"], "finalResponse": "Done.",
          "toolUses": [{"name": tool, "args": {"city": eval_id.split("_")[0]}}]})
