"""The on-disk judge cache: keyed by everything that decides an answer, only readable answers kept."""

from __future__ import annotations

import asyncio
import json

from checker.judges.cache import JudgeCache, cache_key
from checker.judges.client import JudgeReply
from checker.judges.service import JudgeRequest, UnreadableReply

from .conftest import invocation, run_input, score, service_for
from .fake_gemini import json_reply, verdict

BASE = dict(model="gemini-2.5-flash", prompt="p", config={"temperature": 0.0}, sample=0)


def test_key_covers_model_prompt_config_and_sample_but_not_transport():
    key = cache_key(**BASE)
    for change in ({"model": "gemini-2.5-pro"}, {"prompt": "p2"}, {"sample": 1},
                   {"config": {"temperature": 0.5}}):
        assert cache_key(**{**BASE, **change}) != key
    with_transport = {**BASE, "config": {"temperature": 0.0, "http_options": {"base_url": "x"}}}
    assert cache_key(**with_transport) == key


def test_entries_round_trip_and_corrupt_ones_are_misses(tmp_path):
    cache = JudgeCache(tmp_path)
    key = cache_key(**BASE)
    assert cache.get(key) is None
    cache.put(key, JudgeReply(text="ok", total_tokens=7))
    assert cache.get(key) == JudgeReply(text="ok", total_tokens=7)
    path = tmp_path / key[:2] / f"{key}.json"
    path.write_text("{torn")
    assert cache.get(key) is None
    path.write_text(json.dumps({"key": "other", "reply": {"text": "x"}}))
    assert cache.get(key) is None
    assert not [p for p in tmp_path.rglob(".tmp-*")]


def test_unwritable_cache_is_reported_not_fatal(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = JudgeCache(blocker)
    cache.put(cache_key(**BASE), JudgeReply(text="x"))
    assert cache.write_error is not None


def test_unreadable_answers_are_not_cached(fake, env, tmp_path):
    fake.on("q", json_reply("garbage"), json_reply({"a": 1}))
    request = JudgeRequest(model="gemini-2.5-flash", prompt="q", config={})

    def parse(text: str) -> dict:
        data = json.loads(text) if text.startswith("{") else None
        if data is None:
            raise UnreadableReply("not json", text)
        return data

    async def once():
        service = service_for(env, cache_dir=tmp_path)
        try:
            return await service.sample(request, 0, parse)
        except UnreadableReply as exc:
            return exc.reply
        finally:
            await service.aclose()

    assert asyncio.run(once()) == "garbage"
    assert asyncio.run(once()) == {"a": 1}  # asked again, not replayed from the cache
    assert asyncio.run(once()) == {"a": 1}
    assert len(fake.requests) == 2


def test_same_metric_twice_with_cache_makes_no_calls_and_identical_results(fake, env, tmp_path):
    fake.on("Sunny", verdict(True), verdict(False), verdict(True))
    run = run_input([invocation("Weather?", "Sunny.")], [invocation("Weather?", "It is sunny.")])
    crit = {"threshold": 0.5, "judge_model_options": {"num_samples": 3}}
    first_service = service_for(env, cache_dir=tmp_path)
    first = score("final_response_match_v2", crit, run, first_service)
    second_service = service_for(env, cache_dir=tmp_path)
    second = score("final_response_match_v2", crit, run, second_service)
    assert len(fake.requests) == 3
    assert (first_service.stats.calls, second_service.stats.calls) == (3, 0)
    assert second_service.stats.cache_hits == 3
    assert first == second
    assert first.invocations[0].details["agreement"] == "2/3"


def test_unwritable_cache_is_said_on_the_judge_line(fake, env, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    fake.on("Sunny", verdict(True))
    run = run_input([invocation("Weather?", "Sunny.")], [invocation("Weather?", "It is sunny.")])
    service = service_for(env, cache_dir=blocker)
    score("final_response_match_v2", {"threshold": 0.5, "judge_model_options": {"num_samples": 1}},
          run, service)
    assert service.line().startswith("judge: 1 call, 0 cache hits, 120 tokens (judge cache not written: ")
    assert "cacheWriteError" in service.metadata()
