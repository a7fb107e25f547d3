"""How the ADK bridge's process ends (evalcheck_adk_bridge/runtime.py): without the
interpreter's teardown, flushing what the agent printed and the files it left open, and
looking through every object for open files only when a descriptor is open for writing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from evalcheck_adk_bridge.runtime import writing_descriptors

ROOT = Path(__file__).resolve().parents[2]
linux_only = pytest.mark.skipif(not os.path.isdir("/proc/self/fdinfo"), reason="Linux's /proc")


@linux_only
def test_writing_descriptors_are_files_and_pipes_open_for_writing(tmp_path: Path) -> None:
    spared = {int(name) for name in os.listdir("/proc/self/fd")}  # pytest's own, among them
    assert not writing_descriptors(spared)
    (tmp_path / "read.txt").write_text("x")
    a, b = socket.socketpair()
    with open(tmp_path / "read.txt") as reading, a, b:
        assert not writing_descriptors(spared)  # read only, and sockets
        read_end, write_end = os.pipe()
        try:
            assert writing_descriptors(spared)  # a pipe's write end
            assert not writing_descriptors(spared | {write_end})
        finally:
            os.close(read_end)
            os.close(write_end)
        with open(tmp_path / "log.txt", "a"):
            assert writing_descriptors(spared)
        assert not writing_descriptors(spared)
        assert reading.read() == "x" and a.fileno() != b.fileno()


# The end of a bridge process whose agent printed part of a line (stdout is a pipe: block
# buffered) and, with LEAVE_OPEN, left a file open for writing; open_files is replaced by
# one that says it was called, then does what it does.
ENDING = """
import os, sys
from evalcheck_adk_bridge import runtime
looked = runtime.open_files
def open_files(objects):
    sys.stderr.write("looked through every object\\n")
    return looked(objects)
runtime.open_files = open_files
if os.environ.get("LEAVE_OPEN"):
    LOG = open(os.environ["LEAVE_OPEN"], "w")
    LOG.write("left open")
sys.stdout.write("part of a line")
out = open(os.devnull, "w")
runtime.end_process(3, out)
"""


@linux_only
@pytest.mark.parametrize("leaves_a_file_open", [False, True])
def test_the_process_ends_flushing_what_the_agent_wrote(tmp_path: Path, leaves_a_file_open: bool) -> None:
    log = tmp_path / "agent.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LEAVE_OPEN", None)
    env.pop("PYTHONUNBUFFERED", None)  # a pipe's stdout is block buffered, as the bridge's is
    if leaves_a_file_open:
        env["LEAVE_OPEN"] = str(log)
    done = subprocess.run([sys.executable, "-c", ENDING], capture_output=True, text=True,
                          env=env, timeout=60)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "part of a line"
    # The search through every object is made only when a file may need it.
    assert ("looked through every object" in done.stderr) is leaves_a_file_open, done.stderr
    if leaves_a_file_open:
        assert log.read_text() == "left open"
