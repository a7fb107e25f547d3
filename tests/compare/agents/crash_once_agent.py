"""A stdio agent (protocol 1, a process per run) that crashes on the first attempt of every
run and answers right on the next (standard library only): a marker file per (eval id, run)
in $CRASH_ONCE_DIR remembers the first attempt."""

import json
import os
import sys
from pathlib import Path

eval_id, run = "", 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "start":
        eval_id, run = msg["evalId"], int(msg["run"])
        continue
    marker = Path(os.environ["CRASH_ONCE_DIR"]) / f"{eval_id}-{run}"
    if not marker.exists():
        marker.write_text("crashed once")
        print("crash-once agent: crashing on the first attempt", file=sys.stderr, flush=True)
        sys.exit(3)
    sys.stdout.write(json.dumps({
        "type": "response", "invocationId": msg["invocationId"],
        "finalResponse": "The weather in Paris is sunny.",
        "toolUses": [{"name": "get_weather", "args": {"city": "Paris"}}]}) + "\n")
    sys.stdout.flush()
