"""Benchmark of the judge pipeline (prints figures; not a test).

N eval cases (default 100), one turn each, scored with final_response_match_v2 at
num_samples S (default 5) through the real scoring path (checker.scoring.case.score_case, the
real google-genai client, real HTTP) against the fake Gemini server of the tests, running in
its own process and answering every call after a fixed latency (default 200 ms). For each
judge concurrency K the wall time is compared with the ideal, ceil(N * S / K) * latency: the
time if exactly K calls were in flight all the time. A second pass over the now warm
--judge-cache must make no judge call; its wall time is shown too.

    python bench/bench_judges.py [--cases 100] [--samples 5] [--latency 0.2] [--concurrency 8 32 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from checker.inputs.criteria import build_config  # noqa: E402
from checker.judges.client import RetryPolicy  # noqa: E402
from checker.judges.service import JudgeService  # noqa: E402
from checker.metrics.base import ScoringContext  # noqa: E402
from checker.models.evalset import EvalCase, Invocation  # noqa: E402
from checker.models.records import RecordedRun  # noqa: E402
from checker.scoring.case import score_case  # noqa: E402
from tests.judges.fake_gemini import FakeGemini, verdict  # noqa: E402


def turn(user: str, answer: str) -> Invocation:
    return Invocation.model_validate({"user_content": {"parts": [{"text": user}]},
                                      "final_response": {"parts": [{"text": answer}]}})


def workload(cases: int) -> list[tuple[EvalCase, RecordedRun]]:
    out = []
    for n in range(cases):
        case = EvalCase(eval_id=f"case_{n}",
                        conversation=[turn(f"Question {n}?", f"Reference answer {n}.")])
        run = RecordedRun(eval_set_id="bench", eval_id=case.eval_id, run=1,
                          invocations=[turn(f"Question {n}?", f"Agent answer {n}.")])
        out.append((case, run))
    return out


def serve(latency: float, port_out) -> None:
    """The fake Gemini server, in a child process, so its CPU is not the checker's."""
    fake = FakeGemini()
    reply = verdict(True, "fine")
    reply.delay = latency
    fake.on("Agent answer", reply)
    port_out.put(fake.url)
    fake.serve_forever()


def server_stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/stats") as response:
        return json.loads(response.read())


async def score_all(service: JudgeService, config, work) -> list:
    context = ScoringContext(services={"judge": service})
    try:
        return await asyncio.gather(*(score_case(case, config, [run], 1, context)
                                      for case, run in work))
    finally:
        await service.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    args = parser.parse_args()

    config = build_config({"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"num_samples": args.samples}}}}, None, "bench")
    work = workload(args.cases)
    calls = args.cases * args.samples
    print(f"{args.cases} cases x {args.samples} samples = {calls} judge calls, "
          f"{args.latency * 1000:.0f} ms latency per call")
    print(f"{'concurrency':>11} {'wall s':>8} {'ideal s':>8} {'ratio':>6} {'calls':>6} "
          f"{'max in flight':>13} {'cached 2nd pass':>16}")
    for k in args.concurrency:
        queue: multiprocessing.Queue = multiprocessing.Queue()
        server = multiprocessing.Process(target=serve, args=(args.latency, queue), daemon=True)
        server.start()
        url = queue.get(timeout=30)
        try:
            env = {"GOOGLE_API_KEY": "bench", "EVALCHECK_GEMINI_BASE_URL": url}
            with tempfile.TemporaryDirectory() as cache:
                service = JudgeService(k, Path(cache), env=env,
                                       retry=RetryPolicy(attempts=1, jitter=0.0))
                start = time.perf_counter()
                results = asyncio.run(score_all(service, config, work))
                wall = time.perf_counter() - start
                bad = [c.metrics[0] for c in results if c.metrics[0].score != 1.0]
                assert not bad, f"unexpected result: {bad[0]}"
                seen = server_stats(url)
                assert service.stats.calls == calls == seen["requests"]
                warm = JudgeService(k, Path(cache), env=env)
                start = time.perf_counter()
                asyncio.run(score_all(warm, config, work))
                cached = time.perf_counter() - start
                assert warm.stats.calls == 0 and warm.stats.cache_hits == calls
                assert server_stats(url)["requests"] == calls
        finally:
            server.terminate()
            server.join()
        ideal = math.ceil(calls / k) * args.latency
        print(f"{k:>11} {wall:>8.2f} {ideal:>8.2f} {wall / ideal if ideal else float('inf'):>6.2f} {service.stats.calls:>6} "
              f"{seen['max_in_flight']:>13} {cached:>14.2f} s")


if __name__ == "__main__":
    main()
