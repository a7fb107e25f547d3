"""A stdio agent whose answer is right or wrong at random, with a fixed seed (standard
library only). Per (case, run): "steady*" always right, "broken*" always wrong, "flipflop*"
right on odd runs, anything else right with probability 1/2 from
random.Random("<COIN_SEED>:<eval id>:<run>"). Right means the expected tool call.
Appends "<eval id> <run>" to $COIN_LOG per turn when set.
"""

import json
import os
import random
import sys

seed = os.environ.get("COIN_SEED", "0")
log = os.environ.get("COIN_LOG")
eval_id, run = "", 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "start":
        eval_id, run = msg["evalId"], int(msg["run"])
        continue
    if eval_id.startswith("steady"):
        right = True
    elif eval_id.startswith("broken"):
        right = False
    elif eval_id.startswith("flipflop"):
        right = run % 2 == 1
    else:
        right = random.Random(f"{seed}:{eval_id}:{run}").random() < 0.5
    if log:
        with open(log, "a") as f:
            f.write(f"{eval_id} {run}\n")
    city = "Paris" if right else "Lyon"
    sys.stdout.write(json.dumps({
        "type": "response", "invocationId": msg["invocationId"],
        "finalResponse": f"The weather in {city} is sunny.",
        "toolUses": [{"name": "get_weather", "args": {"city": city}}]}) + "\n")
    sys.stdout.flush()
