"""A fake OpenAI-compatible judge server: real HTTP, `/v1/chat/completions` and `/v1/models`.

Scriptable per test. The server answers every request with an *action*: a callable taking the request and
returning a response. Actions compose:

    server = FakeJudgeServer(DemoBrain(), latency=0.2)
    server.action = Sequence(Status(429, retry_after=1), DemoBrain())   # one 429, then real answers
    server.action = PerConversation(Reply("{not json"), DemoBrain())    # malformed first, valid on retry
    server.action = Hang()                                                # never answers
    server.action = StreamForever()                                       # 200, then a body without end
    server.action = Trickle(2.0)                                          # 200, then a byte every 2 s
    server.action = Flip(ReplyJSON({"winner": "1"}), share=0.2, seed=7)  # a fifth of the calls flip their verdict

Every request is logged in `server.requests` so that a test can assert what a judge was shown.
Standard library only: it runs wherever the app runs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fakejudge.protocol import SCRIPTED_NOTE, Action, FakeRequest, Response, _estimate_tokens, completion, make_tool_calls  # noqa: F401  (re-exported)


class Reply:
    """Answer with this text (or with what a function of the request returns)."""

    def __init__(self, content: str | Callable[[FakeRequest], str]):
        self.content = content

    def __call__(self, request: FakeRequest) -> Response:
        text = self.content(request) if callable(self.content) else self.content
        return completion(request, text)


class ReplyJSON:
    """Answer with a JSON object, optionally inside a code fence or after a sentence."""

    def __init__(self, obj: dict, *, fenced: bool = False, preamble: str = ""):
        self.obj, self.fenced, self.preamble = obj, fenced, preamble

    def __call__(self, request: FakeRequest) -> Response:
        text = json.dumps(self.obj)
        if self.fenced:
            text = f"```json\n{text}\n```"
        if self.preamble:
            text = f"{self.preamble}\n{text}"
        return completion(request, text)


class ToolCalls:
    """Answer with tool calls: [(name, arguments dict), ...]."""

    def __init__(self, *calls: tuple[str, dict]):
        self.calls = calls

    def __call__(self, request: FakeRequest) -> Response:
        return completion(request, None, tool_calls=make_tool_calls(self.calls))


class Runaway:
    """A reply that never ends, as a small model that rambles gives: non-JSON text until the request's
    `max_tokens` (or, without one, `context_tokens` minus the prompt), finish_reason "length"."""

    RAMBLE = "Well, let me think about this reply carefully and consider every single aspect of it once more, "

    def __init__(self, *, context_tokens: int = 4096):
        self.context_tokens = context_tokens

    def __call__(self, request: FakeRequest) -> Response:
        limit = request.body.get("max_tokens") or max(16, self.context_tokens - _estimate_tokens(request.all_text))
        text = (self.RAMBLE * (limit * 4 // len(self.RAMBLE) + 1))[: limit * 4]
        return completion(request, text, finish_reason="length")


class ContextLimit:
    """llama.cpp's context check in front of `action`: a request whose messages plus its max_tokens do not
    fit in `tokens` gets the HTTP 400 llama.cpp's server answers."""

    def __init__(self, action: Action, *, tokens: int = 2048):
        self.action, self.tokens = action, tokens

    def __call__(self, request: FakeRequest) -> Response:
        wanted = _estimate_tokens(request.all_text) + (request.body.get("max_tokens") or 0)
        if wanted > self.tokens:
            return Status(
                400,
                message=f"the request exceeds the available context size ({wanted} > {self.tokens} tokens), "
                "try increasing it",
                error_type="exceed_context_size_error",
            )(request)
        return self.action(request)


class IgnoreTools:
    """A server that drops the `tools` of a request (some chat templates cannot show them): the model never
    calls one and answers straight away, here with a verdict it has not checked."""

    def __init__(self, text: str = '{"verdict": "met", "evidence": "The workspace appears to do what was asked."}'):
        self.text = text

    def __call__(self, request: FakeRequest) -> Response:
        return completion(request, self.text)


class Status:
    """An HTTP error: 429 (with Retry-After), 5xx, 4xx."""

    def __init__(self, code: int, *, retry_after: float | None = None, message: str = "", error_type: str = ""):
        self.code, self.retry_after, self.message, self.error_type = code, retry_after, message, error_type

    def __call__(self, request: FakeRequest) -> Response:
        headers = {"Content-Type": "application/json"}
        if self.retry_after is not None:
            headers["Retry-After"] = f"{self.retry_after:g}"
        body = {
            "error": {"message": self.message or f"fake error {self.code}", "type": self.error_type or "fake", "code": self.code}
        }
        return Response(status=self.code, body=json.dumps(body).encode(), headers=headers)


class Hang:
    """Accept the request and never answer (until `seconds` or the server stops)."""

    def __init__(self, seconds: float = 600.0):
        self.seconds = seconds

    def __call__(self, request: FakeRequest) -> Response:
        return Response(hang=self.seconds)


# The start of a chat completion whose reply text never ends: valid JSON so far, never finished.
_ENDLESS_PREFIX = (
    b'{"id": "chatcmpl-endless", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", '
    b'"content": "'
)


def _for(seconds: float, pieces: Iterable[bytes]) -> Iterator[bytes]:
    """`pieces` until `seconds` have passed: a cap, so that a forgotten stream ends with its test."""
    until = time.monotonic() + seconds
    for piece in pieces:
        if time.monotonic() >= until:
            return
        yield piece


class StreamForever:
    """HTTP 200 and its headers at once, then a JSON body that never ends: a few bytes every 100 ms (until
    `seconds` or the server stops). Every read gets data, so only a deadline on the whole call ends it."""

    def __init__(self, seconds: float = 600.0):
        self.seconds = seconds

    def __call__(self, request: FakeRequest) -> Response:
        return Response(
            body=_ENDLESS_PREFIX, headers={"Content-Type": "application/json"},
            drip=_for(self.seconds, itertools.repeat(b"more")), drip_interval=0.1,
        )


class Trickle:
    """HTTP 200, then a JSON body one byte every `interval` seconds, never finished (until `seconds` or the
    server stops): slower than any total deadline, yet never silent as long as a per-read timeout."""

    def __init__(self, interval: float, seconds: float = 600.0):
        self.interval, self.seconds = interval, seconds

    def __call__(self, request: FakeRequest) -> Response:
        endless = itertools.chain(_ENDLESS_PREFIX, itertools.repeat(ord("a")))
        return Response(
            headers={"Content-Type": "application/json"},
            drip=_for(self.seconds, (bytes([byte]) for byte in endless)), drip_interval=self.interval,
        )


class BrokenBody:
    """HTTP 200 whose body is not JSON: a proxy or server fault below the model."""

    def __call__(self, request: FakeRequest) -> Response:
        return Response(body=b'{"id": "chatcmpl-broken", "choices": [', headers={"Content-Type": "application/json"})


class Delay:
    def __init__(self, seconds: float, action: Action):
        self.seconds, self.action = seconds, action

    def __call__(self, request: FakeRequest) -> Response:
        response = self.action(request)
        response.delay += self.seconds
        return response


class Sequence:
    """One action per call, in order, across all requests; the last one repeats."""

    def __init__(self, *actions: Action):
        self.actions = list(actions)
        self._index = itertools.count()
        self._lock = threading.Lock()

    def __call__(self, request: FakeRequest) -> Response:
        with self._lock:
            i = next(self._index)
        return self.actions[min(i, len(self.actions) - 1)](request)


class PerConversation:
    """Like Sequence, but counted per conversation (per rendered prompt): `PerConversation(bad, good)`
    answers every prompt's first call with `bad` and its retry with `good`."""

    def __init__(self, *actions: Action):
        self.actions = list(actions)
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, request: FakeRequest) -> Response:
        with self._lock:
            i = self._counts.get(request.conversation_key, 0)
            self._counts[request.conversation_key] = i + 1
        return self.actions[min(i, len(self.actions) - 1)](request)


class When:
    """`action` for requests the predicate accepts, `otherwise` for the rest."""

    def __init__(self, predicate: Callable[[FakeRequest], bool], action: Action, otherwise: Action):
        self.predicate, self.action, self.otherwise = predicate, action, otherwise

    def __call__(self, request: FakeRequest) -> Response:
        return (self.action if self.predicate(request) else self.otherwise)(request)


_FLIPS = {"1": "2", "2": "1", "pass": "fail", "fail": "pass"}


class Flip:
    """A judge whose verdicts are noisy: each call's verdict from `action` is flipped with probability `share`
    (pairwise "1" <-> "2", pass <-> fail, a score mirrored on its 1-5 scale: low + high - score; a tie and a
    middle score stay). The draw is seeded by (seed, model, conversation, how many times that conversation was
    asked), so the same test flips the same calls, and a conversation asked again draws anew: repeated
    trials of one judgment disagree at the rate asked. `flipped` counts the calls flipped."""

    def __init__(self, action: Action, *, share: float, seed: int = 0, scale: tuple[int, int] = (1, 5)):
        self.action, self.share, self.seed, self.scale = action, share, seed, scale
        self._asked: dict[str, int] = {}
        self._lock = threading.Lock()
        self.flipped = 0

    def _draw(self, request: FakeRequest) -> float:
        conversation = f"{request.model}/{request.conversation_key}"  # jurors share a prompt, not a model
        with self._lock:
            asked = self._asked.get(conversation, 0)
            self._asked[conversation] = asked + 1
        digest = hashlib.sha256(f"{self.seed}/{conversation}/{asked}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    def _flipped(self, verdict: dict) -> dict:
        for field in ("winner", "verdict"):
            if verdict.get(field) in _FLIPS:
                return {**verdict, field: _FLIPS[verdict[field]]}
        if isinstance(verdict.get("score"), int):
            return {**verdict, "score": self.scale[0] + self.scale[1] - verdict["score"]}
        return verdict

    def __call__(self, request: FakeRequest) -> Response:
        response = self.action(request)
        if self._draw(request) >= self.share or response.status != 200:
            return response
        body = json.loads(response.body)
        try:
            verdict = json.loads(body["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError, ValueError):
            return response  # not a verdict object: nothing to flip
        if not isinstance(verdict, dict):
            return response
        with self._lock:
            self.flipped += 1
        return completion(request, json.dumps(self._flipped(verdict)))


def prompt_contains(*needles: str) -> Callable[[FakeRequest], bool]:
    return lambda request: any(n in request.prompt for n in needles)


# --- The server -----------------------------------------------------------------------------------------


class FakeJudgeServer:
    def __init__(self, action: Action | None = None, *, latency: float = 0.0, host: str = "127.0.0.1",
                 port: int = 0, models: tuple[str, ...] = ("fake-judge",)):
        if action is None:
            from fakejudge.brains import DemoBrain

            action = DemoBrain()
        self.action = action
        self.latency = latency
        self.models = models
        self.requests: list[FakeRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._in_flight = 0
        self.max_in_flight = 0
        self.busy_seconds = 0.0  # summed duration of all chat requests: busy / wall = mean concurrency
        self._httpd = ThreadingHTTPServer((host, port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self._httpd.server_address[0]}:{self.port}/v1"

    def start(self) -> FakeJudgeServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-judge", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeJudgeServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0
            self.busy_seconds = 0.0

    def stats(self) -> dict:
        with self._lock:
            chats = [r for r in self.requests if r.path.endswith("/chat/completions")]
            return {
                "chat_requests": len(chats),
                "distinct_prompts": len({r.conversation_key for r in chats}),
                "max_in_flight": self.max_in_flight,
                "busy_seconds": self.busy_seconds,
                "first_at": chats[0].received_at if chats else None,
                "last_at": chats[-1].received_at if chats else None,
            }

    @property
    def chat_requests(self) -> list[FakeRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _enter(self, request: FakeRequest) -> None:
        with self._lock:
            self.requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _leave(self, started: float) -> None:
        with self._lock:
            self._in_flight -= 1
            self.busy_seconds += time.time() - started

    def _wait(self, seconds: float) -> None:
        self._stopping.wait(seconds)


def _make_handler(server: FakeJudgeServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle on, the body waits for the client's delayed
        # ACK (~40 ms) on a kept-alive connection, which would swamp every latency the tests script.
        disable_nagle_algorithm = True

        def log_message(self, *args):  # quiet: tests read server.requests instead
            pass

        def _send(self, response: Response) -> None:
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)

        def _send_drip(self, response: Response) -> None:
            """Headers, then the body as chunks: `body` at once, then each drip piece after its interval."""
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            first = [response.body] if response.body else []
            for index, piece in enumerate(itertools.chain(first, response.drip)):
                if (index or not first) and server._stopping.wait(response.drip_interval):
                    return
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")

        def do_GET(self):
            if self.path.rstrip("/").endswith("/_stats"):  # for benchmarks in another process
                self._send(Response(body=json.dumps(server.stats()).encode(), headers={"Content-Type": "application/json"}))
            elif self.path.rstrip("/").endswith("/_reset"):
                server.reset()
                self._send(Response(body=b"{}", headers={"Content-Type": "application/json"}))
            elif self.path.rstrip("/").endswith("/models"):
                body = {"object": "list", "data": [{"id": m, "object": "model", "owned_by": "fakejudge"} for m in server.models]}
                self._send(Response(body=json.dumps(body).encode(), headers={"Content-Type": "application/json"}))
            else:
                self._send(Status(404, message=f"no route {self.path}")(FakeRequest(self.path, {}, {})))

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if len(raw) < length:  # the client died mid-request (a killed worker): nothing was asked
                self.close_connection = True
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(Status(400, message="request body is not JSON")(FakeRequest(self.path, {}, {})))
                return
            headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"}
            request = FakeRequest(self.path, body, headers)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(Status(404, message=f"no route {self.path}")(request))
                return
            server._enter(request)
            left = False
            try:
                response = server.action(request)
                wait = server.latency + response.delay
                if wait:
                    server._wait(wait)
                if response.hang:
                    server._wait(response.hang)
                    self.close_connection = True
                    return
                if response.drip is not None:
                    self.close_connection = True  # a stream cut by the server leaves the connection unusable
                    self._send_drip(response)
                    return
                # The call is over once its answer is ready: counted out before the answer is written, or a
                # client that frees its slot on reading it and sends the next call at once would be counted
                # twice for a moment (max_in_flight one above the client's limit).
                server._leave(request.received_at)
                left = True
                self._send(response)
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                if not left:
                    server._leave(request.received_at)

    return Handler
