"""An OpenAI-style server for the agent's tests that keeps when each generation request arrived and what it carried,
and answers with as many token messages as it asked for."""
import http.server
import json
import threading
import time


class Recorder(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    # (arrival time.monotonic(), headers, body) of each generation request.
    seen: list = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path != "/v1/models":
            self.send_error(404)
            return
        body = json.dumps({"object": "list", "data": [{"id": "rec", "object": "model", "owned_by": "someone"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        arrived = time.monotonic()
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/tokenize":
            self.send_error(404)
            return
        Recorder.seen.append((arrived, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i in range(body["max_tokens"]):
            self.wfile.write(b'data: {"choices":[{"index":0,"text":" t%d"}]}\r\n\r\n' % i)
        self.wfile.write(b"data: [DONE]\r\n\r\n")


def serve_recorder(test):
    """A Recorder for `test` (a TestCase), emptied, shut down when the test ends; returns its base URL."""
    Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    test.addCleanup(server.server_close)
    test.addCleanup(server.shutdown)
    return f"http://127.0.0.1:{server.server_address[1]}"
