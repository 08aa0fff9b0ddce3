#!/usr/bin/python3
"""STAND-IN for an OpenAI-compatible chat-completions server.

This is NOT a model. No real model is reachable from the test machines, so
this server answers POST /v1/chat/completions from canned responses chosen by
the request's "model" field (see SCENARIOS below and README.md). It exists
only to test kernelsmith's C++ model client: parsing, retries, deadlines,
authentication and error handling. Every JSON answer carries
"system_fingerprint": "kernelsmith-standin" so it can never pass for a model.

Usage: standin_server.py --port-file PATH [--log PATH]
"""
import argparse
import email.utils
import json
import os
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FINGERPRINT = "kernelsmith-standin"
LIFETIME_S = 600  # a crashed test must never leave the server running

GOOD_SCHEDULE = (
    "Here is my proposal.\n<reasoning>Tile the output 64x64 and keep the "
    "accumulators in registers.</reasoning>\n<schedule>\nsplit c.i 64 -> io ii"
    "\nsplit c.j 64 -> jo ji\n</schedule>\nThat should be faster.")
CANNED = {
    "good-schedule": GOOD_SCHEDULE,
    # A matmul body (examples/matmul.ks) with its plan: 16x16 tiles in local memory.
    "good-kernel": (
        "<reasoning>Tiles of 16x16 in local memory, one output a work-item."
        "</reasoning>\n<kernel>\n/* ksmith plan\n"
        "   launch mm global [N, N] local [16, 16] (a, b, c, N)\n*/\n"
        "__kernel void mm(__global const float *a, __global const float *b,"
        " __global float *c, int N) {\n"
        "  __local float ta[16][16], tb[16][16];\n"
        "  const int j = get_global_id(0), i = get_global_id(1);\n"
        "  const int lj = get_local_id(0), li = get_local_id(1);\n"
        "  float acc = 0.0f;\n"
        "  for (int k0 = 0; k0 < N; k0 += 16) {\n"
        "    ta[li][lj] = i < N && k0 + lj < N ? a[i * N + k0 + lj] : 0.0f;\n"
        "    tb[li][lj] = k0 + li < N && j < N ? b[(k0 + li) * N + j] : 0.0f;\n"
        "    barrier(CLK_LOCAL_MEM_FENCE);\n"
        "    for (int k = 0; k < 16; ++k) acc += ta[li][k] * tb[k][lj];\n"
        "    barrier(CLK_LOCAL_MEM_FENCE);\n"
        "  }\n"
        "  if (i < N && j < N) c[i * N + j] = acc;\n"
        "}\n</kernel>"),
    # The same shape of answer, but the body writes its input: Clang refuses it.
    "bad-kernel": (
        "<reasoning>Reuse the input as scratch.</reasoning>\n<kernel>\n"
        "/* ksmith plan\n   launch k global [N * N] local [64] (a, b, c, N)\n*/\n"
        "__kernel void k(__global float *a, __global const float *b,"
        " __global float *c, int N) {\n"
        "  int e = get_global_id(0);\n  if (e >= N * N) return;\n"
        "  a[e] = 0.0f;\n  c[e] = b[e];\n}\n</kernel>"),
    # A schedule for examples/gemm_divide_sum.ks whose first step is a graph rewrite:
    # the sum pushed through the GEMM, then the column sum mapped to work-items.
    "rewrite-schedule": (
        "<reasoning>The sum over the features is a GEMV of the summed weight."
        "</reasoning>\n<schedule>\nrewrite push_sum total\nsplit weight_sum.k1 32 -> g l"
        "\nbind weight_sum.g group.x\nbind weight_sum.l local.x\n</schedule>"),
    # A rewrite that does not apply there (y is elementwise): a refused proposal.
    "bad-rewrite": (
        "<reasoning>Push the scaling's sum down.</reasoning>\n"
        "<schedule>\nrewrite push_sum y\n</schedule>"),
    "prose": "I think you should tile the loops and use local memory.",
    "broken-xml":
        "<reasoning>unclosed <schedule>split c.i 4 -> a b</reasoning>",
    "truncated":
        "<reasoning>Tile the loops</reasoning>\n<schedule>\nsplit c.i 6",
}
SCENARIOS = set(CANNED) | {
    "echo", "rate-limited", "rate-limited-date", "flaky-500", "always-500",
    "slow", "bad-json", "no-choices", "bad-request", "count", "delay"}
PARAMS = ("temperature", "top_p", "max_tokens", "seed")

# State shared by the handler threads: requests seen per model, answer ids.
LOCK = threading.Lock()
COUNTS = {}
NEXT_ID = [0]


def error(message, kind):
    return {"error": {"message": message, "type": kind}}


def usage(messages, content):
    prompt = max(1, sum(len(str(m.get("content", ""))) for m in messages) // 4)
    completion = max(1, len(content) // 4)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion}


class Handler(BaseHTTPRequestHandler):
    server_version = "kernelsmith-standin"
    # HTTP/1.1 so that "Expect: 100-continue" (libcurl, large bodies) is
    # answered at once instead of stalling the client for a second; every
    # answer has a Content-Length, so keep-alive works.
    protocol_version = "HTTP/1.1"
    expected_key = None  # set from STANDIN_EXPECT_KEY in main()
    log_path = None

    def log_message(self, *args):
        pass  # keep stderr quiet; the JSON log (--log) is the record

    def do_GET(self):
        self.handle_any(None)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.handle_any(self.rfile.read(length) if length > 0 else b"")

    do_PUT = do_DELETE = do_PATCH = do_POST

    def handle_any(self, raw):
        request = None
        try:
            request = json.loads(raw) if raw else None
        except ValueError:
            pass
        if not isinstance(request, dict):
            request = None
        status, headers, body = self.answer(request)
        self.write_log(request, status)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its deadline); nothing to answer

    def answer(self, request):
        """Returns (status, extra headers, body bytes) for one request."""
        def js(status, obj, headers=None):
            obj["system_fingerprint"] = FINGERPRINT  # errors included
            return status, headers or {}, json.dumps(obj).encode()

        # Checked first and for every path; never echoes what was received.
        if self.expected_key is not None and self.headers.get(
                "Authorization") != "Bearer " + self.expected_key:
            return js(401, error("invalid api key", "invalid_request_error"))
        if self.command != "POST" or self.path.split("?")[0] not in (
                "/v1/chat/completions", "/chat/completions"):
            return js(404, error("no such endpoint: %s %s" % (
                self.command, self.path), "invalid_request_error"))
        if (request is None or not isinstance(request.get("model"), str)
                or not isinstance(request.get("messages"), list)
                or not all(isinstance(m, dict) for m in request["messages"])):
            return js(400, error("body must be JSON with \"model\" and "
                                 "\"messages\"", "invalid_request_error"))
        model, messages = request["model"], request["messages"]
        if model not in SCENARIOS:
            return js(404, error("The model `%s` does not exist" % model,
                                 "invalid_request_error"))
        with LOCK:
            COUNTS[model] = n = COUNTS.get(model, 0) + 1
            NEXT_ID[0] += 1
            answer_id = "standin-%d" % NEXT_ID[0]

        content, finish = GOOD_SCHEDULE, "stop"
        if model in CANNED:
            content = CANNED[model]
            finish = "length" if model == "truncated" else "stop"
        elif model == "echo":
            content = "".join("%s: %s\n" % (m.get("role"), m.get("content"))
                              for m in messages)
            content += "\nparams: " + " ".join(
                "%s=%s" % (p, request.get(p)) for p in PARAMS)
        elif model in ("rate-limited", "rate-limited-date") and n == 1:
            # Both forms of Retry-After: seconds, and an HTTP date.
            retry = "1" if model == "rate-limited" else \
                email.utils.formatdate(time.time() + 2, usegmt=True)
            return js(429, error("rate limited", "rate_limit_error"),
                      {"Retry-After": retry})
        elif model == "flaky-500" and n <= 2:
            return js(500, error("internal error", "server_error"))
        elif model == "always-500":
            return js(503, error("service unavailable", "server_error"))
        elif model == "slow":
            time.sleep(5)  # longer than the client's deadline in the tests
        elif model == "bad-json":
            return 200, {}, b'{"choices": ['
        elif model == "no-choices":
            return js(200, {"id": "x", "object": "chat.completion",
                            "choices": [], "usage": usage(messages, "")})
        elif model == "bad-request":
            return js(400, error("max_tokens is too large",
                                 "invalid_request_error"))
        elif model == "count":
            content = "request %d\n%s" % (n, GOOD_SCHEDULE)
        elif model == "delay":  # half a second, so that requests in flight together show
            time.sleep(0.5)
            content = "request %d\n%s" % (n, GOOD_SCHEDULE)
        return js(200, {
            "id": answer_id, "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "message": {
                "role": "assistant", "content": content}}],
            "usage": usage(messages, content)})

    def write_log(self, request, status):
        if not self.log_path:
            return
        request = request or {}
        messages = request.get("messages")
        messages = messages if isinstance(messages, list) else []
        # Only whether a header was present: never its value, never a key.
        entry = {"model": request.get("model"), "path": self.path,
                 "authorized": "Authorization" in self.headers,
                 "status": status, "time": time.time(),
                 "user_chars": sum(len(str(m.get("content", "")))
                                   for m in messages if isinstance(m, dict)
                                   and m.get("role") == "user"),
                 "user_text": "".join(str(m.get("content", ""))
                                      for m in messages if isinstance(m, dict)
                                      and m.get("role") == "user")}
        entry.update((p, request.get(p)) for p in PARAMS)
        with LOCK, open(self.log_path, "a") as log:
            log.write(json.dumps(entry) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--log")
    args = parser.parse_args()
    Handler.expected_key = os.environ.get("STANDIN_EXPECT_KEY")
    Handler.log_path = args.log

    # Exit at once on SIGTERM or after LIFETIME_S, even mid-request (a
    # "slow" answer sleeping): os._exit does not wait for handler threads.
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    timer = threading.Timer(LIFETIME_S, os._exit, (0,))
    timer.daemon = True
    timer.start()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    # Atomic, so a test polling the file never reads a partial number.
    with open(args.port_file + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
