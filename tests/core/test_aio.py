"""checker.aio.run: asyncio.run without the repr of a big result (Python 3.11's Runner
formats its main task, result included, when it restores the SIGINT handler)."""

from __future__ import annotations

from checker import aio


class Big:
    reprs = 0

    def __repr__(self) -> str:
        Big.reprs += 1
        return "Big()"


def test_the_result_comes_back_and_is_never_formatted():
    async def work() -> Big:
        return Big()

    Big.reprs = 0
    result = aio.run(work())
    assert isinstance(result, Big)
    assert Big.reprs == 0  # asyncio.run(work()) formats it twice on Python 3.11
