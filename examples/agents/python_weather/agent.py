#!/usr/bin/env python3
"""A complete evalcheck stdio-protocol agent in plain Python (no dependencies).

Run it on the example eval set:

    evalcheck run examples/weather --agent-command "python3 examples/agents/python_weather/agent.py"

A real agent would call its model where ``answer`` decides what to do; the protocol part
is the loop at the bottom: read one JSON line, answer one JSON line.
"""

import json
import sys

WEATHER = {"Paris": ("sunny", 21), "Rome": ("sunny", 24), "Oslo": ("rainy", 9)}


def get_weather(city):
    condition, temp_c = WEATHER.get(city, ("unknown", 0))
    return {"condition": condition, "temp_c": temp_c}


def answer(text):
    """One user turn -> (final text, tool uses, tool responses)."""
    cities = sorted((c for c in WEATHER if c in text), key=text.index)
    uses, responses = [], []
    for city in cities:
        result = get_weather(city)
        uses.append({"name": "get_weather", "args": {"city": city}})
        responses.append({"name": "get_weather", "response": result})
    if len(cities) == 1:
        r = responses[0]["response"]
        final = f"It is {r['condition']} in {cities[0]}, {r['temp_c']} degrees Celsius."
    elif len(cities) == 2:
        (a, ra), (b, rb) = sorted(zip(cities, responses), key=lambda x: -x[1]["response"]["temp_c"])
        final = (f"{a} is warmer: {ra['response']['temp_c']} degrees Celsius "
                 f"against {rb['response']['temp_c']} in {b}.")
    else:
        final = "Which city do you mean?"
    return final, uses, responses


def main():
    for line in sys.stdin:  # one JSON message per line; EOF means we are done
        message = json.loads(line)
        if message["type"] == "start":
            session = message["session"]  # appName, userId, state
            print(f"starting {message['evalId']} run {message['run']}", file=sys.stderr)
            continue
        if message["type"] != "user":
            continue
        text = " ".join(p.get("text", "") for p in message["content"]["parts"])
        try:
            final, uses, responses = answer(text)
        except Exception as exc:  # tell the checker; it fails this run with the message
            print(json.dumps({"type": "error", "message": str(exc)}), flush=True)
            return 1
        print(json.dumps({
            "type": "response",
            "invocationId": message["invocationId"],
            "finalResponse": final,
            "toolUses": uses,
            "toolResponses": responses,
            "usage": {"promptTokenCount": 0, "candidatesTokenCount": 0},
        }), flush=True)  # flush: the checker waits for this line
    return 0


if __name__ == "__main__":
    sys.exit(main())
