"""The new user's trip app of issue 40, as a warm stdio agent (standard library only).

"lisbon_usd" should ask currency_agent for EUR to USD. On main ($TRIP_SIDE=main) it does so
in runs 1 and 2 of every 3 and books a hotel in the third; on the PR's branch (anything
else) it books a hotel in every run. "rome_weather" always calls get_forecast for Rome.
"""

import json
import os
import sys

main = os.environ.get("TRIP_SIDE") == "main"
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
    if eval_id == "lisbon_usd":
        right = main and run % 3 != 0
        call = ({"name": "currency_agent", "args": {"request": "EUR to USD"}} if right
                else {"name": "book_hotel", "args": {"city": "Lisbon"}})
        answer = "1 EUR is 1.08 USD." if right else "Booked a hotel in Lisbon."
    else:
        call, answer = {"name": "get_forecast", "args": {"city": "Rome"}}, "Sunny in Rome."
    send({"type": "response", "invocationId": msg["invocationId"], "finalResponse": answer,
          "toolUses": [call]})
