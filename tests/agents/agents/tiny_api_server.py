"""A small stand-in for ``adk api_server`` (standard library only): ``tiny_api_server.py PORT PIDFILE``.

It speaks the subset of the ADK API that evalcheck uses. The user's text steers it:
"SLOW" sleeps 5 s, "FAIL" answers HTTP 500, "BADLENGTH" answers with ``Content-Length: ²``
(the latin-1 byte 0xb2, whose ``str.isdigit()`` is true), anything else answers with one tool call and
a final text naming the session's state. Every created and deleted session is logged to
stderr.
"""

import json
import os
import sys
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, pidfile = int(sys.argv[1]), sys.argv[2]
with open(pidfile, "a") as f:
    f.write(f"{os.getpid()}\n")
sessions = {}


def log(line: str) -> None:
    # One write per line: print() writes the text and the newline separately, so two
    # handler threads logging at once could splice their lines together.
    os.write(2, (line + "\n").encode())


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")

    def do_GET(self):
        if self.path == "/list-apps":
            return self.reply(200, ["tiny"])
        self.reply(404, {"detail": "Not Found"})

    def do_DELETE(self):
        sid = self.path.rsplit("/", 1)[-1]
        if sessions.pop(sid, None) is not None:
            log(f"deleted {sid}")
        self.reply(200, {})

    def do_POST(self):
        body = self.body()
        if self.path.endswith("/sessions"):
            sid = str(uuid.uuid4())
            sessions[sid] = body.get("state", {})
            log(f"session {sid} {json.dumps(sessions[sid])}")
            return self.reply(200, {"id": sid, "state": sessions[sid]})
        if self.path == "/run":
            text = body["newMessage"]["parts"][0]["text"]
            if "SLOW" in text:
                time.sleep(5)
            if "FAIL" in text:
                return self.reply(500, {"detail": "Internal Server Error"})
            if "BADLENGTH" in text:
                self.close_connection = True
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "\u00b2")  # sent as latin-1: b"\xb2"
                self.end_headers()
                self.wfile.write(b"[]")
                return
            state = sessions[body["sessionId"]]
            inv = "e-" + str(uuid.uuid4())
            return self.reply(200, [
                {"invocationId": inv, "author": "tiny", "content": {"role": "model", "parts": [
                    {"functionCall": {"id": "f1", "name": "lookup", "args": {"q": text}}}]},
                 "usageMetadata": {"promptTokenCount": 7}},
                {"invocationId": inv, "author": "tiny", "content": {"role": "user", "parts": [
                    {"functionResponse": {"id": "f1", "name": "lookup", "response": {"ok": True}}}]}},
                {"invocationId": inv, "author": "tiny", "content": {"role": "model", "parts": [
                    {"text": f"answer for {state.get('user_name')}"}]}},
            ])
        self.reply(404, {"detail": "Not Found"})


print("tiny server starting", file=sys.stderr, flush=True)
time.sleep(float(os.environ.get("TINY_STARTUP_DELAY", "0")))
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
