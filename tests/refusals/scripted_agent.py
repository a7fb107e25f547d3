"""A protocol-1 stdio agent without a model (TEST ONLY): answers "It is sunny in CITY.", but
"I do not know." for the eval case named by EVALCHECK_TEST_WRONG, and says its model
service refused (the protocol's ``unavailable`` field) every run numbered EVALCHECK_TEST_REFUSE_FROM
or more: the runs after --num-runs are confirmation runs."""

from __future__ import annotations

import json
import os
import re
import sys

wrong = os.environ.get("EVALCHECK_TEST_WRONG")
refuse_from = int(os.environ.get("EVALCHECK_TEST_REFUSE_FROM") or 0)
start = None
for line in sys.stdin:
    message = json.loads(line)
    if message["type"] == "start":
        start = message
        continue
    if message["type"] != "user":
        continue
    assert start is not None
    if refuse_from and start["run"] >= refuse_from:
        print(json.dumps({"type": "error", "invocationId": message["invocationId"],
                          "message": "429 RESOURCE_EXHAUSTED (scripted)",
                          "unavailable": {"code": "429 RESOURCE_EXHAUSTED", "retryAfter": 0.1}}),
              flush=True)
        continue
    city = re.search(r"weather in (\w+)", message["content"]["parts"][0]["text"]).group(1)
    answer = "I do not know." if start["evalId"] == wrong else f"It is sunny in {city}."
    print(json.dumps({"type": "response", "invocationId": message["invocationId"],
                      "finalResponse": answer}), flush=True)
