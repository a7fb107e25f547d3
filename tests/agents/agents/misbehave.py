"""An agent for the runner tests that misbehaves on purpose: ``misbehave.py MODE PIDFILE``.

It writes its pid (and its child's, when it starts one) to PIDFILE, one per line, so the
tests can check that nothing is left running. Standard library only: it starts fast.
"""

import json
import os
import signal
import subprocess
import sys
import time

mode, pidfile = sys.argv[1], sys.argv[2]


def note_pid(pid):
    with open(pidfile, "a") as f:
        f.write(f"{pid}\n")


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def answer(msg, text="It is sunny in Paris."):
    send({"type": "response", "invocationId": msg["invocationId"], "finalResponse": text})


def start_child():
    child = subprocess.Popen(["sleep", "300"])
    note_pid(child.pid)
    return child


note_pid(os.getpid())
if mode == "no_stdin":
    time.sleep(300)
if mode == "ignore_sigterm":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "flood_then_answer":
    chunk = "x" * 1023 + "\n"
    for _ in range(20 * 1024):  # 20 MiB of junk lines on each stream
        sys.stdout.write(chunk)
        sys.stderr.write(chunk)
    sys.stdout.write("y" * (3 << 20) + "\n")  # one 3 MiB non-JSON line
    sys.stderr.write("the last words of the log\n")
    sys.stdout.flush()
    sys.stderr.flush()

turn = 0
for line in sys.stdin:
    msg = json.loads(line)
    if msg["type"] != "user":
        continue
    turn += 1
    if mode == "exit_early":
        print("fatal: no API key configured", file=sys.stderr)
        sys.exit(3)
    if mode == "crash_turn2" and turn == 2:
        raise RuntimeError("agent crashed in turn two")
    if mode in ("hang", "ignore_sigterm"):
        start_child()
        time.sleep(300)
    if mode == "garbage_then_answer":
        print("debug: thinking about the weather...")
        print("[1, 2, 3]")
        answer(msg)
        continue
    if mode == "invalid_message":
        send({"type": "response", "invocationId": msg["invocationId"], "toolUses": [{"args": {}}]})
        continue
    if mode == "unknown_type":
        send({"type": "answer", "text": "hi"})
        continue
    if mode == "wrong_id":
        send({"type": "response", "invocationId": "inv-999", "finalResponse": "hi"})
        continue
    if mode == "error_message":
        send({"type": "error", "message": "model quota exceeded"})
        continue
    if mode == "huge_json_line":
        sys.stdout.write('{"type": "response", "finalResponse": "' + "z" * (3 << 20) + '"}\n')
        sys.stdout.flush()
        continue
    if mode == "leave_child":
        start_child()
    answer(msg)

if mode == "nonzero_after_last":
    sys.exit(4)
if mode == "no_exit":
    time.sleep(300)
