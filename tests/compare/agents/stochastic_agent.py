"""A warm stdio agent whose answer is right with a per-case probability, drawn fresh for
every run (standard library only). $STOCHASTIC_PROBABILITIES is a JSON object
{eval id: probability}; a case not named is always right. Each run draws from
random.Random("<STOCHASTIC_SEED>:<eval id>:<run>") (run numbers keep growing through
confirmation runs, so every run is a fresh draw). Right means the expected tool call.
Appends "<eval id> <run>" to $STOCHASTIC_LOG per turn when set.
"""

import json
import os
import random
import sys

probabilities = json.loads(os.environ.get("STOCHASTIC_PROBABILITIES", "{}"))
seed = os.environ.get("STOCHASTIC_SEED", "0")
log = os.environ.get("STOCHASTIC_LOG")
eval_id, run = "", 0


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
    right = random.Random(f"{seed}:{eval_id}:{run}").random() < probabilities.get(eval_id, 1.0)
    if log:
        with open(log, "a") as f:
            f.write(f"{eval_id} {run}\n")
    city = "Paris" if right else "Lyon"
    send({"type": "response", "invocationId": msg["invocationId"],
          "finalResponse": f"The weather in {city} is sunny.",
          "toolUses": [{"name": "get_weather", "args": {"city": city}}]})
