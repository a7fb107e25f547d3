"""An agent under test that attacks the log and the reports: ``hostile_agent.py MODE TEXT``.

MODE ``error`` answers every turn with ``{"type": "error", "message": TEXT}``; ``answer``
answers with TEXT as its final response. Either way it first writes TEXT to stderr (its log
tail is shown in evalcheck's progress lines). Standard library only.
"""

import json
import sys

mode, text = sys.argv[1], sys.argv[2]
sys.stderr.write(text + "\n")
sys.stderr.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] == "start":
        continue
    if mode == "error":
        reply = {"type": "error", "message": text, "invocationId": msg["invocationId"]}
    else:
        reply = {"type": "response", "invocationId": msg["invocationId"], "finalResponse": text}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
