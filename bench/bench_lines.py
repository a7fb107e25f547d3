"""Benchmark: finding each eval case's line in a large eval file (prints figures; not a test).

Annotations and report links point at the line of each case's ``eval_id``. The previous way
searched the file once per case from the start and counted newlines up to each match:
quadratic in the file size (398 s for one case of a 60,000-case file). The current way
(checker.inputs.evalfile._find_lines) is one pass. Both run side by side on the same generated
files; the previous way only on the smaller ones (it would take minutes on the largest).
Each figure is the best of --repeat passes, on a machine that may be shared.

    python bench/bench_lines.py [--cases 60000] [--old-cases 2000,6000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import re
import time

from checker.inputs.evalfile import _find_lines

KEYS = ("eval_id", "evalId")


def previous_find_lines(text: str, keys: tuple[str, ...], ids: list[str]) -> dict[str, int]:
    """The implementation before issue 11, verbatim: a search per id, newlines counted from 0."""
    lines: dict[str, int] = {}
    key_alt = "|".join(re.escape(json.dumps(k)) for k in keys)
    pos = 0
    for case_id in ids:
        spellings = {json.dumps(case_id, ensure_ascii=False), json.dumps(case_id)}
        id_alt = "|".join(re.escape(x) for x in sorted(spellings))
        pattern = re.compile(rf"(?:{key_alt})\s*:\s*(?:{id_alt})")
        match = pattern.search(text, pos) or pattern.search(text)
        if match is None:
            lines[case_id] = 1
            continue
        lines[case_id] = text.count("\n", 0, match.start()) + 1
        pos = match.end()
    return lines


def eval_file(cases: int) -> tuple[str, list[str]]:
    """An eval set as ADK writes it (indent 2): each case one turn with a tool call."""
    ids = [f"case_{i:06d}" for i in range(cases)]
    data = {"eval_set_id": "big", "eval_cases": [{
        "eval_id": case_id,
        "conversation": [{
            "invocation_id": f"inv-{case_id}",
            "user_content": {"role": "user", "parts": [{"text": f"What is the weather in city {i}?"}]},
            "final_response": {"role": "model", "parts": [{"text": f"Sunny and {i % 30} C in city {i}."}]},
            "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": {"city": f"city {i}"}}]},
        }],
        "session_input": {"app_name": "weather", "user_id": "u", "state": {}},
    } for i, case_id in enumerate(ids)]}
    return json.dumps(data, indent=2), ids


def best(fn, text: str, ids: list[str], repeat: int) -> tuple[float, dict[str, int]]:
    times, out = [], {}
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn(text, KEYS, ids)
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=60_000)
    parser.add_argument("--old-cases", default="2000,6000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = sorted({int(n) for n in args.old_cases.split(",") if n} | {args.cases})
    print(f"{'cases':>8} {'file MB':>8} {'previous s':>11} {'current s':>10}  lines agree")
    for n in sizes:
        text, ids = eval_file(n)
        now, lines = best(_find_lines, text, ids, args.repeat)
        if n == args.cases and n not in {int(x) for x in args.old_cases.split(",") if x}:
            before, agree = "(skipped)", "-"
        else:
            old_time, old_lines = best(previous_find_lines, text, ids, 1)
            before, agree = f"{old_time:11.3f}", str(old_lines == lines)
        expected_first = text.count("\n", 0, text.index('"eval_id"')) + 1
        assert lines[ids[0]] == expected_first and len(set(lines.values())) == n
        print(f"{n:>8} {len(text) / 1e6:8.1f} {before:>11} {now:10.3f}  {agree}")
    print(f"target: the {args.cases:,} cases located in under 2 s")


if __name__ == "__main__":
    main()
