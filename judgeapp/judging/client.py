"""The judge client: the one module that imports `openai`.

Any OpenAI-compatible server works (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM). Every call is made at
temperature 0 through the `openai` client's `chat.completions.create`, each HTTP attempt bounded as a whole
by the judge's timeout (connect, headers and body: `_Deadline`); transient failures (429 honouring
Retry-After, 408, 5xx, timeouts, dropped connections) are retried with exponential backoff, permanent ones
(other 4xx) fail at once. A per-judge limiter bounds concurrent calls, and a response cache keyed by (base
URL, model, messages, parameters) makes re-running a judgment free.

No Django here: the cache and the limiter are passed in (the app gives database-backed ones).

What a call is given and gives back, the cache and the limiter are in `judge_calls.py`; the errors a call
raises in `judge_errors.py`."""

from __future__ import annotations

import email.utils
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import tenacity

from judgeapp.judging.errors import ServiceUnavailable
from judgeapp.judging.judge_calls import (
    DEFAULT_MAX_TOKENS,
    TRUNCATED,
    CallResult,
    EndpointConfig,
    JudgeOutcome,
    Limiter,
    ResponseCache,
    ThreadLimiter,
    cache_key,
    correction_message,
    reply_excerpt,
)
from judgeapp.judging.judge_errors import (
    JudgeError,
    JudgeRejected,
    JudgeUnavailable,
    JudgeUnreachable,
    StructuredOutputUnsupported,
)
from judgeapp.judging.lazy import LazyModule
from judgeapp.judging.parsing import ParseError, ReplySpec

log = logging.getLogger(__name__)


class _LazyOpenAI:
    """`openai` takes a third of a second to import: it is loaded by the first call, not by every command's
    start (`manage.py gate --help` never calls a judge)."""

    def __getattr__(self, name: str):
        import openai as module

        globals()["openai"] = module  # later lookups skip this proxy
        return getattr(module, name)


openai = _LazyOpenAI()
httpx2 = LazyModule("httpx2")  # the openai client's own HTTP library, loaded with it
httpcore2 = LazyModule("httpcore2")  # the sockets below httpx2


def openai_preload() -> None:
    """Import `openai` now, with the chat resource a client loads on its first `create` (its pydantic models:
    a tenth of a second under load): a run starts this in a thread while its units are planned, and a worker
    before it forks its pool processes (judging/signals.py), so that no first call waits on the import."""
    openai.OpenAI  # noqa: B018 - the proxy imports the module
    from openai.resources.chat import Chat  # noqa: F401


RETRY_AFTER_CAP_SECONDS = 120.0
# The wait before a retry without Retry-After: this, doubling each time, never above the cap.
BACKOFF_INITIAL_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 30.0


# Words in an error body that mean the server refused the structured-output request, not the call.
_FORMAT_REJECTION_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar", "structured")


_process_limiter = ThreadLimiter()
# One openai client per endpoint per thread: a client's connection pool is shared under its locks, and
# sixteen lanes of one command waiting on one pool's lock spent a fifth of their time there (bench/shell.py
# under py-spy). A thread keeps its own keep-alive connection instead; a worker's pool process has one thread.
# That a client is never shared between threads is also what lets its _Deadline hold one call's deadline.
_thread_clients = threading.local()
# Endpoints whose server refused a structured-output format, so later calls fail without a request.
_rejected_formats: dict[tuple[str, str, str], str] = {}


class _Deadline:
    """The network backend of one thread's client: every wait on its sockets (connect, TLS handshake, each
    write, each read) is capped at what is left of the current attempt, and past the deadline the next one
    raises a timeout at once.

    Why here, at the sockets: httpx's timeouts are per operation, so a server that answers 200 and then
    sends a byte now and then (or a body that never ends, or headers a byte at a time) never trips one, and
    a call lasted until the task's time limit. Checking the deadline between the body's chunks (a transport
    wrapper) would still let the read that starts just before the deadline wait a whole read timeout, and
    would not see headers that trickle; a watchdog thread that closes the socket does not wake a read
    blocked on it on Linux. Every blocking step of an httpx request in this thread passes through these
    methods, so an attempt ends within its timeout (plus the CPU between steps) whatever the server sends.
    What is not bounded: the name lookup before a connect (the system resolver takes no timeout). A write
    is capped as one step; a request body (kilobytes) fits the socket's send buffer, so it is one send.

    `at` is set by the attempt and cleared after it; the client is this thread's alone (_thread_clients),
    so no other call can see it. Duck-typed to httpcore's NetworkBackend and NetworkStream (not subclassed,
    so that importing this module does not import httpcore)."""

    def __init__(self):
        self.at: float | None = None  # time.monotonic() by which the current attempt must end
        self._sockets = httpcore2.SyncBackend()

    def cap(self, timeout: float | None, expired: type[Exception]) -> float | None:
        """`timeout` for one blocking step, no longer than what is left of the attempt."""
        if self.at is None:
            return timeout
        left = self.at - time.monotonic()
        if left <= 0:
            raise expired("the call's deadline passed")
        return left if timeout is None else min(timeout, left)

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        stream = self._sockets.connect_tcp(host, port, self.cap(timeout, httpcore2.ConnectTimeout), local_address, socket_options)
        return _DeadlineStream(stream, self)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        stream = self._sockets.connect_unix_socket(path, self.cap(timeout, httpcore2.ConnectTimeout), socket_options)
        return _DeadlineStream(stream, self)

    def sleep(self, seconds: float) -> None:
        self._sockets.sleep(seconds)


class _DeadlineStream:
    """A connection whose every read and write waits no longer than its _Deadline allows."""

    def __init__(self, stream, deadline: _Deadline):
        self._stream, self._deadline = stream, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, self._deadline.cap(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, self._deadline.cap(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        stream = self._stream.start_tls(ssl_context, server_hostname, self._deadline.cap(timeout, httpcore2.ConnectTimeout))
        return _DeadlineStream(stream, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


def _openai_client(config: EndpointConfig) -> tuple[openai.OpenAI, _Deadline]:
    """This thread's client for the endpoint, and the deadline its sockets keep."""
    base_url = config.base_url or os.environ.get("OPENAI_BASE_URL") or None
    key = (base_url, config.api_key_env, config.timeout)
    clients = getattr(_thread_clients, "clients", None)
    if clients is None:
        clients = _thread_clients.clients = {}
    client = clients.get(key)
    if client is None:
        # Local servers need no key; the client insists on one, so a placeholder stands in.
        api_key = os.environ.get(config.api_key_env) or "not-set"
        deadline = _Deadline()
        http_client = openai.DefaultHttpxClient(verify=_tls_context())
        # httpx takes no network backend; the connection pools under its transports (the direct one, and a
        # proxy's from HTTPS_PROXY and the like) do, and make every connection with it
        # (tests/judging/test_client.py: a body that never ends still ends the call).
        for transport in [http_client._transport, *http_client._mounts.values()]:
            if transport is not None:
                transport._pool._network_backend = deadline
        # Retries are ours (below), so that every attempt is counted and Retry-After is honoured exactly.
        client = clients[key] = (
            openai.OpenAI(base_url=base_url, api_key=api_key, timeout=config.timeout, max_retries=0, http_client=http_client),
            deadline,
        )
    return client


_tls_lock = threading.Lock()


@functools.cache
def _tls_context_build():
    return httpx2.create_ssl_context()


def _tls_context():
    """One TLS context for every thread's client in this process, the HTTP library's default one (the
    system's CA certificates, or SSL_CERT_FILE / SSL_CERT_DIR): building it reads the CA store, 20 ms of
    CPU, and a command's sixteen lanes each built their own while the first calls waited."""
    with _tls_lock:  # built once even when the lanes' first calls come together
        return _tls_context_build()


def call_deadline_seconds(config: EndpointConfig) -> float:
    """The longest one call (`JudgeClient.chat`) to this endpoint can take, whatever its server does:
    every attempt at its whole timeout, and before each retry the longest wait (a Retry-After, capped at
    RETRY_AFTER_CAP_SECONDS, or the backoff's cap). What sizes task time limits and leases. The wait for a
    slot of the judge's limit comes before the call and is not in it."""
    attempts = max(1, config.max_attempts)
    return config.timeout * attempts + (attempts - 1) * max(RETRY_AFTER_CAP_SECONDS, BACKOFF_MAX_SECONDS)


def _field(part: Any, name: str) -> Any:
    """A field of a reply's part: an attribute of the model `create` built, or a key of a dict it left as it
    came; None for anything else (a number where a choice should be, say)."""
    if isinstance(part, openai.BaseModel):
        return getattr(part, name, None)
    if isinstance(part, dict):
        return part.get(name)
    return None


def _count(value: Any) -> int:
    """A token count from a reply: a non-negative int, else 0 (a hostile server's "many" is not stored)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31 else 0


def _status_of(exc: BaseException) -> int | None:
    return getattr(exc, "status_code", None)


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    status = _status_of(exc)
    if status is not None:
        return status in (408, 429) or status >= 500
    # A body that is not JSON (a proxy's error page, a cut connection) is the transport failing.
    return isinstance(exc, (openai.APIResponseValidationError, json.JSONDecodeError))


def _retry_after_seconds(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        if parsed is None:
            return None
        seconds = parsed.timestamp() - time.time()
    return max(0.0, min(seconds, RETRY_AFTER_CAP_SECONDS))


def _error_text(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if body is not None:
        return json.dumps(body) if not isinstance(body, str) else body
    response = getattr(exc, "response", None)
    if response is not None:
        try:
            return response.text[:500]
        except Exception:  # noqa: BLE001 - a streamed or closed body has no text; the status says enough
            return ""
    return str(exc)


class JudgeClient:
    """Calls one endpoint. Thread-safe; make one per endpoint and share it."""

    def __init__(
        self,
        config: EndpointConfig,
        *,
        cache: ResponseCache | None = None,
        limiter: Limiter | None = None,
        sleep: Callable[[float], None] = time.sleep,
        backoff_initial: float = BACKOFF_INITIAL_SECONDS,
        backoff_max: float = BACKOFF_MAX_SECONDS,
    ):
        self.config = config
        self.cache = cache
        self.limiter = limiter or _process_limiter
        self._sleep = sleep
        self._backoff = tenacity.wait_exponential_jitter(multiplier=backoff_initial, max=backoff_max, jitter=0.25)

    # --- raw calls ---------------------------------------------------------------------------------------

    def max_tokens(self, requested: int | None = None) -> int:
        return requested or self.config.max_tokens or DEFAULT_MAX_TOKENS

    def response_format(self, schema: dict | None, schema_name: str) -> dict | None:
        if schema is None or self.config.structured_output == "none":
            return None
        if self.config.structured_output == "json_object":
            # llama.cpp's server reads a `schema` inside json_object (and answers 500 to json_schema);
            # other servers ignore the extra key.
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema, "strict": True}}

    def chat(
        self,
        messages: list[dict],
        *,
        schema: dict | None = None,
        schema_name: str = "verdict",
        tools: list[dict] | None = None,
        max_tokens: int | None = None,
        use_cache: bool = True,
        trial: int = 1,
    ) -> CallResult:
        params: dict[str, Any] = {"temperature": self.config.temperature}
        response_format = self.response_format(schema, schema_name)
        if response_format is not None:
            params["response_format"] = response_format
        if tools:
            params["tools"] = tools
        params["max_tokens"] = self.max_tokens(max_tokens)

        key = cache_key(self.config.base_url, self.config.model, messages, params, trial=trial)
        if use_cache and self.cache is not None:
            hit = self.cache.get(key)
            # A truncated reply is never stored; one stored before that rule is asked again.
            if hit is not None and hit.get("finish_reason") != TRUNCATED:
                return CallResult(**{**hit, "attempts": 0, "latency_ms": 0, "cached": True})

        if response_format is not None:
            refused = _rejected_formats.get(self._format_key())
            if refused:
                raise StructuredOutputUnsupported(refused, None)

        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            with self.limiter(self.config.name, self.config.max_concurrency, seconds=self.config.timeout):
                client, deadline = _openai_client(self.config)
                started = time.monotonic()
                deadline.at = started + self.config.timeout
                try:
                    completion = client.chat.completions.create(model=self.config.model, messages=messages, **params)
                finally:
                    deadline.at = None
                if isinstance(completion, str):
                    # `create` gives the body as text when it is not JSON and not labelled JSON (a proxy's
                    # page): the transport failing, retried like a JSON body that does not parse.
                    raise json.JSONDecodeError("the reply is not JSON", completion[:200], 0)
                return completion, time.monotonic() - started

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.config.max_attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception(lambda exc: _is_transient(exc) and not self._is_format_refusal(exc)),
            sleep=self._sleep,
            reraise=True,
        )
        try:
            response, elapsed = retrying(attempt)
        except ServiceUnavailable:
            raise  # the limiter's database or Redis stayed out of reach: the service's fault, never the judge's
        except Exception as exc:  # noqa: BLE001 - every failure becomes one of our three, with one line
            error = self._translate(exc, attempts, response_format)
            error.attempts = attempts
            raise error from exc

        result = self._result_from(response, attempts, elapsed)
        # A reply cut at max_tokens is not an answer: caching it would make every re-run fail the same way
        # without asking the model again.
        if self.cache is not None and result.finish_reason not in ("error", TRUNCATED):
            stored = {k: v for k, v in result.__dict__.items() if k not in ("attempts", "latency_ms", "cached")}
            self.cache.set(key, stored)
        return result

    def _wait(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        retry_after = _retry_after_seconds(exc) if exc is not None else None
        if retry_after is not None:
            return retry_after
        return self._backoff(retry_state)

    def _format_key(self) -> tuple[str, str, str]:
        return (self.config.base_url or "", self.config.model, self.config.structured_output)

    def _is_format_refusal(self, exc: BaseException) -> bool:
        if self.config.structured_output == "none":
            return False
        status = _status_of(exc)
        if status not in (400, 422, 500, 501):
            return False
        body = _error_text(exc).lower()
        return any(word in body for word in _FORMAT_REJECTION_WORDS)

    def _translate(self, exc: BaseException, attempts: int, response_format: dict | None) -> JudgeError:
        status = _status_of(exc)
        where = f"judge {self.config.name!r} ({self.config.model})"
        if response_format is not None and self._is_format_refusal(exc):
            message = (
                f"{where}: the server refuses structured output {self.config.structured_output!r} "
                f"(HTTP {status}); set structured_output to 'json_object' or 'none' for this judge"
            )
            _rejected_formats[self._format_key()] = message
            # Not logged as a warning: the run fails with this message and the command says it once.
            log.info(message)
            return StructuredOutputUnsupported(message, status)
        if isinstance(exc, openai.APITimeoutError):
            return JudgeUnavailable(f"{where}: timed out after {self.config.timeout:g}s, {attempts} attempts")
        if isinstance(exc, openai.APIConnectionError):
            return JudgeUnreachable(f"{where}: cannot connect to the server, {attempts} attempts")
        if status is not None and _is_transient(exc):
            return JudgeUnavailable(f"{where}: HTTP {status} after {attempts} attempts")
        if isinstance(exc, (json.JSONDecodeError, openai.APIResponseValidationError)):
            return JudgeUnavailable(f"{where}: the server's replies are not valid JSON, {attempts} attempts")
        if status is not None:
            detail = " ".join(_error_text(exc).split())[:200]
            hint = " (check the key in the judge's api_key_env)" if status in (401, 403) else ""
            return JudgeRejected(f"{where}: HTTP {status}{hint}: {detail}", status)
        return JudgeUnavailable(f"{where}: {type(exc).__name__}: {exc}")

    @staticmethod
    def _result_from(completion: Any, attempts: int, elapsed: float) -> CallResult:
        """The ChatCompletion read as far as it is one; anything else is the server failing. `create` builds
        it without validating (a field of the wrong type is kept as it came), so every field is checked."""
        choices = _field(completion, "choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], (openai.BaseModel, dict)):
            raise JudgeUnavailable("the server's reply has no choices")
        choice = choices[0]
        message = _field(choice, "message")
        calls = _field(message, "tool_calls")
        tool_calls = []
        for call in calls if isinstance(calls, list) else []:
            function = _field(call, "function")
            name = _field(function, "name")
            if not isinstance(name, str):
                raise JudgeUnavailable("the server's reply has a tool call without a function name")
            arguments = _field(function, "arguments")
            tool_calls.append({
                "id": str(_field(call, "id") or ""),
                "type": "function",
                "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
            })
        usage = _field(completion, "usage")
        content, finish_reason = _field(message, "content"), _field(choice, "finish_reason")
        return CallResult(
            text=content if isinstance(content, str) else "",
            tool_calls=tool_calls,
            finish_reason=finish_reason if isinstance(finish_reason, str) else "",
            prompt_tokens=_count(_field(usage, "prompt_tokens")),
            completion_tokens=_count(_field(usage, "completion_tokens")),
            latency_ms=round(elapsed * 1000),
            attempts=attempts,
        )

    # --- a verdict: call, parse, one retry ---------------------------------------------------------------

    def judge(
        self, messages: list[dict], spec: ReplySpec, *, judged: Sequence[str], max_tokens: int | None = None,
        use_cache: bool = True, trial: int = 1,
    ) -> JudgeOutcome:
        """Ask for a verdict of the spec's form. A reply that does not parse gets one retry, in which the
        judge sees its reply and what was wrong with it; a second failure is returned, not raised.

        `judged`: the texts under judgment that the prompt holds (a reply, a customer message, a file), as
        they were written: a verdict object copied from one of them is a parse failure, "echoed judged
        content" (parsing.verdict_object). With structured output the whole reply must be the object.
        `use_cache=False` asks the server even when the cache holds a reply (a caller retrying a verdict
        that failed); a JudgeError raised on the way carries every HTTP attempt made, in `attempts`.
        `trial`: which of a judgment's repeated trials this is (its cache key, never the request)."""
        outcome = JudgeOutcome(parsed=None, raw_reply="", messages=list(messages), cached=True)
        conversation = list(messages)
        limit = self.max_tokens(max_tokens)
        structured = self.response_format(spec.schema or None, spec.name) is not None
        judged = tuple(judged)
        for parse_attempt in (1, 2):
            try:
                result = self.chat(
                    conversation, schema=spec.schema or None, schema_name=spec.name, max_tokens=limit, use_cache=use_cache,
                    trial=trial,
                )
            except StructuredOutputUnsupported:
                raise
            except JudgeError as exc:
                exc.attempts += outcome.attempts
                if parse_attempt == 1:
                    raise
                # The retry got no reply (a context-length 400, a server gone): the first reply's failure
                # stands, with its reason, and the reply is kept.
                outcome.parse_error += f"; its retry got no reply: {exc}"
                outcome.attempts = exc.attempts
                return outcome
            outcome.attempts += result.attempts
            outcome.prompt_tokens += result.prompt_tokens
            outcome.completion_tokens += result.completion_tokens
            outcome.latency_ms += result.latency_ms
            outcome.cached = outcome.cached and result.cached
            outcome.parse_attempts = parse_attempt
            outcome.raw_reply = result.text
            outcome.finish_reason = result.finish_reason
            outcome.truncated = result.finish_reason == TRUNCATED
            try:
                if outcome.truncated:
                    raise ParseError(f"the reply was cut off at the token limit ({limit} tokens) before it finished")
                outcome.parsed = spec.parse(result.text, judged=judged, whole=structured)
                outcome.parse_error = ""
                return outcome
            except ParseError as exc:
                outcome.parse_error = str(exc)
                if parse_attempt == 2:
                    break  # the judgment keeps the messages sent: no correction follows the last reply
                conversation = conversation + [
                    {"role": "assistant", "content": reply_excerpt(result.text)},
                    {"role": "user", "content": correction_message(str(exc), spec.form, truncated=outcome.truncated)},
                ]
                outcome.messages = conversation
        return outcome
