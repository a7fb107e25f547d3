"""How busy an agent's process group keeps a CPU (checker/agents/cpu_use.py): a process that
computes against one that sleeps, the leader's descendants counted, and the share each
look gives (the busiest group's since the previous look)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from checker.agents.cpu_use import BusyShare, busy_seconds

# what cpu_use reads: each thread's schedstat, and its children (the agent under /bin/sh)
pytestmark = pytest.mark.skipif(
    not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    or not os.path.exists("/proc/self/schedstat"), reason="the kernel tells no schedstat or children")

# A shell leading its group, with a child that computes (or sleeps): what /bin/sh -c
# starts for an agent command.
SPIN = "import time\nend = time.monotonic() + 5\nwhile time.monotonic() < end: pass\n"
SLEEP = "import time\ntime.sleep(5)\n"


def group(code: str) -> subprocess.Popen:
    return subprocess.Popen(["/bin/sh", "-c", f'"{sys.executable}" -c "$CODE"; true'],
                            env={**os.environ, "CODE": code}, process_group=0)


def test_a_computing_group_is_busy_and_a_sleeping_one_is_not() -> None:
    spinning, sleeping = group(SPIN), group(SLEEP)
    try:
        time.sleep(0.3)  # both children started
        before = (busy_seconds(spinning.pid), busy_seconds(sleeping.pid))
        time.sleep(0.5)
        after = (busy_seconds(spinning.pid), busy_seconds(sleeping.pid))
    finally:
        for p in (spinning, sleeping):
            os.killpg(p.pid, 9)
            p.wait()
    assert None not in before and None not in after
    # the child's time, not the shell's (which only waits): about the 0.5 s looked at
    assert after[0] - before[0] > 0.35
    assert after[1] - before[1] < 0.05
    deadline = time.monotonic() + 5
    while busy_seconds(spinning.pid) is not None and time.monotonic() < deadline:
        time.sleep(0.05)  # the killed child is reaped by whoever inherited it
    assert busy_seconds(spinning.pid) is None  # gone: nothing to tell


def test_the_share_is_the_busiest_groups_since_the_previous_look() -> None:
    now = [10.0]
    busy = {1: 0.0, 2: 0.0}
    look = BusyShare(busy=lambda pgid: busy.get(pgid), clock=lambda: now[0])
    assert look.share([1, 2]) is None  # nothing to compare with yet
    now[0], busy[1], busy[2] = 10.5, 0.1, 0.4
    assert look.share([1, 2]) == pytest.approx(0.8)  # group 2: 0.4 s of 0.5
    now[0], busy[1], busy[3] = 11.0, 0.2, 0.0
    assert look.share([1, 3]) == pytest.approx(0.2)  # 3 is new: judged from the next look
    now[0], busy[3] = 11.5, 0.45
    assert look.share([3]) == pytest.approx(0.9)
    assert look.share([4]) is None  # the kernel tells nothing of it
