"""A stdio agent started once per run (standard library only) that answers right, except
that with $BREAK_SCREENING_RUNS set it answers wrong in runs 1 to that number: it reads
$EVALCHECK_RUN, so it fails exactly the PR's first runs, which screening reads, and passes
the fresh confirmation runs numbered after them - every one, or with $FRESH_FAIL_EVERY=K
all but those whose number K divides. $BREAK_CASES (eval ids, comma-separated) limits it
to those cases. Appends "<eval id> <run>" to $AGENT_LOG."""

import json
import os
import sys

run = int(os.environ["EVALCHECK_RUN"])
screening = int(os.environ.get("BREAK_SCREENING_RUNS") or 0)
every = int(os.environ.get("FRESH_FAIL_EVERY") or 0)
cases = os.environ.get("BREAK_CASES")
broken = (run <= screening or (screening and every and run % every == 0)) and \
    (not cases or os.environ["EVALCHECK_EVAL_ID"] in cases.split(","))
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] != "user":
        continue
    with open(os.environ["AGENT_LOG"], "a") as log:
        log.write(f"{os.environ['EVALCHECK_EVAL_ID']} {run}\n")
    city = "Lyon" if broken else "Paris"
    print(json.dumps({"type": "response", "invocationId": msg["invocationId"],
                      "finalResponse": f"The weather in {city} is sunny.",
                      "toolUses": [{"name": "get_weather", "args": {"city": city}}]}), flush=True)
