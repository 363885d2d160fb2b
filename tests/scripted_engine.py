"""A scripted stand-in for the engine: a real process serving vLLM's HTTP API.

`python tests/scripted_engine.py --port N SCENARIO_JSON`. Every completion streams
`tokens` tokens, `per_write` tokens per network write, `gap_s` between writes, framed
with `eol` ("\\n" or "\\r\\n"); `status` != 200 answers an error instead; `die_after`
makes the process exit after that many writes of a request (the engine crashing
mid-stream); `log_file` is printed first (a real engine's log, so that the run can be
sealed: its evidence is that engine's). Only the standard library: the test process imports
none of it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCENARIO: dict = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        print(format % args, flush=True)  # the engine log

    def _send(self, code: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, b"")
        elif self.path == "/v1/models":
            self._send(200, json.dumps({"data": [{"id": "scripted"}]}).encode())
        elif self.path == "/metrics":
            self._send(200, b"# scripted\n", "text/plain")
        else:
            self._send(404, b"{}")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if SCENARIO.get("status", 200) != 200:
            self._send(SCENARIO["status"], b'{"error": "scripted"}')
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        eol = SCENARIO.get("eol", "\n").encode()
        tokens, per_write = body["max_tokens"], SCENARIO.get("per_write", 1)
        for n, first in enumerate(range(0, tokens, per_write)):
            if n == SCENARIO.get("die_after"):
                os._exit(3)
            ids = list(range(first, min(first + per_write, tokens)))
            events = b"".join(b"data: " + json.dumps({"choices": [{
                "text": f"t{i}", "token_ids": [i], "finish_reason": None}]}).encode()
                + eol + eol for i in ids)
            self.wfile.write(events)
            self.wfile.flush()
            time.sleep(SCENARIO.get("gap_s", 0.002))
        usage = {"prompt_tokens": 3, "completion_tokens": tokens,
                 "prompt_tokens_details": {"cached_tokens": 0}}
        self.wfile.write(b"data: " + json.dumps({"choices": [{"text": "", "token_ids": [],
                         "finish_reason": "length"}], "usage": usage}).encode() + eol + eol
                         + b"data: [DONE]" + eol + eol)
        self.close_connection = True


if __name__ == "__main__":
    port = int(sys.argv[sys.argv.index("--port") + 1])
    SCENARIO.update(json.loads(sys.argv[-1]))
    if SCENARIO.get("ignore_term"):  # a server that will not stop when asked
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if SCENARIO.get("log_file"):
        with open(SCENARIO["log_file"], encoding="utf-8", errors="replace") as log:
            sys.stdout.write(log.read())
        sys.stdout.flush()
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
