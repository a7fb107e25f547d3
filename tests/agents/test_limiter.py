"""The adaptive limit of runs in flight (checker/limiter.py): slow start while latency
is flat and runs wait (from the first finished run), a cut on a refusal (once for the calls
in flight and their retries, no growth for the asked delay) or
climbing latency (never under the start), the cap, a fixed limit that never moves, slots
handed out in order, and the history the end-of-run line and the metadata show."""

from __future__ import annotations

import asyncio

import pytest

from checker.limiter import MIN_ROUND, PLATEAU, PLATEAU_MOST, AdaptiveLimiter, ConcurrencyHistory


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Gone:
    """A run that asked for a slot and gave up (what a raised limit skips)."""

    def done(self) -> bool:
        return True


def busy(limiter: AdaptiveLimiter, waiting: int = 1) -> None:
    """Every slot taken and ``waiting`` more runs asking (without an event loop)."""
    limiter.in_flight = limiter.limit
    limiter._waiters.extend(Gone() for _ in range(waiting))  # type: ignore[misc]


def finish(limiter: AdaptiveLimiter, n: int, seconds: float = 1.0) -> None:
    for _ in range(n):
        busy(limiter)
        limiter.note_latency(seconds)
        limiter._waiters.clear()


def test_slow_start_grows_one_a_finished_run_from_the_first() -> None:
    limiter = AdaptiveLimiter(4, 64, clock=Clock())
    finish(limiter, MIN_ROUND - 1)
    assert limiter.limit == 11  # the start's round, not judged yet, grows as if flat
    finish(limiter, 1)
    assert limiter.limit == 12  # judged flat: on
    finish(limiter, 5)
    assert limiter.limit == 17  # slow start: one more a finished run
    assert limiter.history() == [4, 17]


def test_an_agent_on_cpu_is_cut_back_after_the_start_round() -> None:
    limiter = AdaptiveLimiter(8, 64, clock=Clock())
    finish(limiter, MIN_ROUND, seconds=1.0)
    assert limiter.limit == 16
    finish(limiter, MIN_ROUND, seconds=2.0)  # twice as slow: past CLIMBED (1.6)
    # 19 (three more runs while the median was still the start round's), then x 0.8
    assert limiter.limit == int(19 * 0.8)


def test_it_does_not_grow_when_no_run_waits_for_a_slot() -> None:
    limiter = AdaptiveLimiter(4, 64, clock=Clock())
    for _ in range(3 * MIN_ROUND):
        limiter.in_flight = 2  # half the slots used, nobody waiting
        limiter.note_latency(1.0)
    assert limiter.limit == 4


def test_a_refusal_cuts_once_a_round_and_holds_growth_for_the_asked_delay() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(16, 64, clock=clock)
    finish(limiter, 16)  # flat: growing, one a run
    assert limiter.limit == 32
    limiter.note_refusal(2.0)
    cut = limiter.limit
    assert cut == 24  # 32 x 0.75
    limiter.note_refusal(2.0)  # the same excess: no second cut
    assert limiter.limit == cut and limiter.refusals == 2
    finish(limiter, 3)
    assert limiter.limit == cut  # the service asked for 2 s
    clock.now += 2.3
    limiter.note_refusal(2.0)  # a retry of the refused, back after 2 s and its jitter (2.4 s)
    assert limiter.limit == cut
    clock.now += 2.1  # past the 2 s that refusal asked for too
    finish(limiter, cut)
    assert limiter.limit == cut + 3  # additive now: one a round of MIN_ROUND runs (24 / 8)
    clock.now += 2.5
    limiter.note_refusal(None)
    assert limiter.limit == int(27 * 0.75) < cut


def test_a_refusal_the_agent_paces_for_is_counted_and_cuts_nothing() -> None:
    """The agent paces the refused model's calls to the quota the service stated: more runs
    at once send it no more calls. Slow start goes on; an unpaced refusal still cuts."""
    clock = Clock()
    limiter = AdaptiveLimiter(8, 64, clock=clock)
    finish(limiter, 8)
    assert limiter.limit == 16
    limiter.note_refusal(2.0, paced=True)
    assert limiter.limit == 16 and limiter.refusals == 1
    finish(limiter, 8)  # no hold for the delay asked, and still slow start: one a run
    assert limiter.limit == 24
    limiter.note_refusal(2.0)
    assert limiter.limit == 18 and limiter.refusals == 2  # 24 x 0.75


def test_the_last_step_back_to_a_refused_limit_is_taken_slowly() -> None:
    """Refused at 8, cut to 6: back to 7 at about one a round of runs, from 7 to 8 (the
    limit refused) PLATEAU times slower, past 8 as fast as before."""
    clock = Clock()
    limiter = AdaptiveLimiter(8, 64, clock=clock)
    finish(limiter, MIN_ROUND)  # a round at the start: the latency to compare with
    limiter.begin_at(8)
    limiter.note_refusal(None)
    assert limiter.limit == 6
    clock.now += 10  # past the cut's window

    def runs_to_reach(limit: int) -> int:
        n = 0
        while limiter.limit < limit:
            finish(limiter, 1)
            n += 1
        return n

    to_7, to_8, to_9 = runs_to_reach(7), runs_to_reach(8), runs_to_reach(9)
    assert to_7 == 7 and to_9 == 8, (to_7, to_8, to_9)  # 1/6, 1/6.17, ... then 1/8 a run
    assert to_8 == 28, (to_7, to_8, to_9)  # 1/(4 L) a run: 2 (8^2 - 7.0x^2) runs, 4 times as many
    assert to_8 >= PLATEAU * to_7 * 0.9


def test_a_limit_refused_again_and_again_is_probed_ever_more_rarely() -> None:
    """A steady quota between 2 runs at once and 3 (adk api_server at 5 calls a second):
    each time 3 is refused again the last step back to it takes twice as many runs, up to
    PLATEAU_MOST times slower; refused at another limit (a storm cutting on down, or
    growth past it) the slowness is PLATEAU's again."""
    clock = Clock()
    limiter = AdaptiveLimiter(4, 64, clock=clock)
    finish(limiter, MIN_ROUND)
    limiter.begin_at(4)
    limiter.note_refusal(None)
    assert limiter.limit == 3  # refused at 4
    clock.now += 10

    def refused_at_3_then_runs_back() -> int:
        limiter.note_refusal(None)
        assert limiter.limit == 2
        clock.now += 10
        n = 0
        while limiter.limit < 3:
            finish(limiter, 1)
            n += 1
        return n

    runs = [refused_at_3_then_runs_back() for _ in range(6)]
    # 1/(P x) a run from x = 2.25 to 3: about P (3^2 - 2.25^2) / 2 = 1.97 P runs, for
    # P = 4 (3 first refused), 8, 16, 32, then no slower
    assert runs == [8, 16, 31, 63, 63, 63], runs
    assert [round(1.96875 * p) for p in (4, 8, 16, 32)] == [8, 16, 32, 63]
    assert PLATEAU_MOST == 32
    for _ in range(40):  # on past 3 without a refusal
        finish(limiter, 1)
    assert limiter.limit >= 4
    refused_at = limiter.limit
    limiter.note_refusal(None)  # another limit refused: PLATEAU again
    clock.now += 10
    n = 0
    while limiter.limit < refused_at:
        finish(limiter, 1)
        n += 1
    assert n < 2 * PLATEAU * refused_at, n


def test_refusals_cut_down_to_one_and_growth_stops_at_the_cap() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(8, 12, clock=clock)
    finish(limiter, 40)
    assert limiter.limit == 12
    for _ in range(20):
        clock.now += 5
        limiter.note_refusal(None)
    assert limiter.limit == 1
    report = limiter.report()
    assert (report.start, report.cap, report.lowest, report.highest, report.final) == (8, 12, 1, 12, 1)


def test_climbing_latency_cuts_back_towards_the_start_never_under_it() -> None:
    limiter = AdaptiveLimiter(8, 64, clock=Clock())
    finish(limiter, 8, seconds=1.0)  # the start's round (the best so far), growing as if flat
    finish(limiter, 8, seconds=1.0)
    assert limiter.limit == 24
    seen = []
    for _ in range(60):  # a CPU-bound agent: each run takes longer with more in flight
        finish(limiter, 1, seconds=limiter.limit / 8)
        seen.append(limiter.limit)
    assert max(seen[-20:]) <= 8 * 1.6 and min(seen) >= 8  # near the start, where latency is flat
    finish(limiter, 3 * MIN_ROUND, seconds=10.0)
    assert limiter.limit == 8  # climbing: back to the start, and never under it


def test_latency_is_judged_per_turn() -> None:
    limiter = AdaptiveLimiter(8, 64, clock=Clock())
    finish(limiter, 8, seconds=1.0)
    for _ in range(8):
        busy(limiter)
        limiter.note_latency(3.0, turns=3)  # three turns of a second: as flat as before
        limiter._waiters.clear()
    assert limiter.limit == 24


def test_a_fixed_limit_never_moves() -> None:
    limiter = AdaptiveLimiter(4, 4, fixed=True, clock=Clock())
    finish(limiter, 40)
    limiter.note_refusal(1.0)
    assert limiter.limit == 4 and limiter.refusals == 1
    assert limiter.report().changes == () and limiter.report().adaptive is False


def test_the_start_known_later_resets_the_history() -> None:
    limiter = AdaptiveLimiter(1, 32, clock=Clock())
    limiter.begin_at(8)
    assert limiter.limit == 8 and limiter.history() == [8]
    limiter.begin_at(50)
    assert limiter.limit == 32  # within the cap


def test_slots_are_handed_out_in_order_up_to_the_limit() -> None:
    async def scenario() -> list[str]:
        limiter = AdaptiveLimiter(2, 8, clock=Clock())
        order: list[str] = []

        async def run(name: str) -> None:
            await limiter.acquire()
            order.append(f"+{name}")
            assert limiter.in_flight <= limiter.limit
            await asyncio.sleep(0.01)
            order.append(f"-{name}")
            limiter.release()

        await asyncio.gather(*(run(name) for name in "abcde"))
        assert limiter.in_flight == 0 and limiter.most_in_flight == 2
        return order

    order = asyncio.run(scenario())
    assert order[:2] == ["+a", "+b"] and order.index("+c") > order.index("-a")
    assert [x for x in order if x.startswith("+")] == ["+a", "+b", "+c", "+d", "+e"]


@pytest.mark.parametrize("freed_first", [False, True])
def test_a_cancelled_wait_gives_no_slot_away_and_ends_cancelled(freed_first: bool) -> None:
    # freed_first: Ctrl-C cancels every run at once, so a run in flight may free its slot
    # before a cancelled waiter's task resumes, and the freed slot's wake-up drops the
    # cancelled waiter first.
    async def scenario() -> None:
        limiter = AdaptiveLimiter(1, 1, clock=Clock())
        await limiter.acquire()
        waiting = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        waiting.cancel()
        if freed_first:
            limiter.release()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        if not freed_first:
            limiter.release()
        assert limiter.in_flight == 0
        await asyncio.wait_for(limiter.acquire(), 1)  # the slot is free again
        assert limiter.in_flight == 1

    asyncio.run(scenario())


def test_a_raised_limit_lets_waiting_runs_in_at_once() -> None:
    async def scenario() -> None:
        limiter = AdaptiveLimiter(1, 8, clock=Clock())
        await limiter.acquire()
        waiting = [asyncio.ensure_future(limiter.acquire()) for _ in range(3)]
        await asyncio.sleep(0)
        limiter.begin_at(4)
        await asyncio.wait_for(asyncio.gather(*waiting), 1)
        assert limiter.in_flight == 4

    asyncio.run(scenario())


def test_turns_name_the_peaks_and_troughs() -> None:
    history = ConcurrencyHistory(adaptive=True, start=32, cap=64, final=24, lowest=16, highest=32,
                                 most_in_flight=32,
                                 changes=((1.0, 24), (2.0, 16), (3.0, 20), (4.0, 24)))
    assert history.turns() == [32, 16, 24]
    assert history.metadata()["overTime"] == [[1.0, 24], [2.0, 16], [3.0, 20], [4.0, 24]]
    zigzag = ConcurrencyHistory(adaptive=True, start=1, cap=9, final=2, lowest=1, highest=9,
                                most_in_flight=9,
                                changes=tuple((float(i), v) for i, v in
                                              enumerate([5, 2, 6, 3, 7, 4, 8, 2])))
    assert zigzag.turns() == [1, 7, 4, 8, 2][:1] + [6, 3, 7, 4, 8, 2][-5:]


def look(limiter: AdaptiveLimiter, clock: Clock, share: float, after: float = 0.25) -> int:
    """Every slot taken, more runs asking, and the agent ``share`` busy over the 0.25 s
    that ended ``after`` seconds on: the limit then."""
    busy(limiter)
    clock.now += after
    limiter.note_agent_busy(share, 0.25)
    return limiter.limit


def test_an_idle_agent_grows_the_limit_at_once_toward_half_a_cpu() -> None:
    clock = Clock()
    limiter = AdaptiveLimiter(8, 64, clock=clock)
    assert look(limiter, clock, 0.05) == 32  # mostly asleep: at most four times
    assert look(limiter, clock, 0.05, after=0.1) == 32  # began before that growth: not judged
    assert look(limiter, clock, 0.4) == 40  # x 0.5 / 0.4
    assert look(limiter, clock, 0.5) == 40  # busy half the time: no more
    assert look(AdaptiveLimiter(8, 64, clock=clock), clock, 0.2) == 20  # x 0.5 / 0.2
    assert limiter.history() == [8, 40]


def test_a_busy_agent_or_no_run_waiting_or_a_refusal_grows_nothing_for_idleness() -> None:
    clock = Clock()
    assert look(AdaptiveLimiter(8, 64, clock=clock), clock, 0.9) == 8
    unwanted = AdaptiveLimiter(8, 64, clock=clock)
    unwanted.in_flight = 5  # slots to spare
    unwanted.note_agent_busy(0.05, 0.25)
    assert unwanted.limit == 8
    refused = AdaptiveLimiter(8, 64, clock=clock)
    refused.note_refusal(None)
    # the service said no: the usual rules from there
    assert look(refused, clock, 0.05) == 6 and not refused.grows_when_idle()
    fixed = AdaptiveLimiter(8, 8, fixed=True, clock=clock)
    assert look(fixed, clock, 0.05) == 8 and not fixed.grows_when_idle()


def test_idle_growth_stops_at_the_cap_and_while_latency_climbs() -> None:
    clock = Clock()
    capped = AdaptiveLimiter(8, 12, clock=clock)
    assert look(capped, clock, 0.05) == 12 and not capped.grows_when_idle()
    climbing = AdaptiveLimiter(8, 64, clock=clock)
    finish(climbing, MIN_ROUND, seconds=1.0)  # the best round
    finish(climbing, MIN_ROUND // 2, seconds=1.4)  # slower (within CLIMBED: held)
    finish(climbing, MIN_ROUND // 2 + 1, seconds=1.45)
    held = climbing.limit
    assert look(climbing, clock, 0.05, after=1.0) == held
