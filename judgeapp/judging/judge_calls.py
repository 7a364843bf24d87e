"""What a judge call is given and gives back (endpoint configuration, one call's result, a judgment's
outcome), the response cache and the concurrency limiter it goes through, and the cache's keys."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

# Sent when neither the call nor the endpoint names a limit: a runaway reply must not fill the model's context.
DEFAULT_MAX_TOKENS = 1024
TRUNCATED = "length"  # the finish_reason of a reply cut at max_tokens
# How much of an unusable reply the parse retry shows the judge: enough to recognise it, never all of it
# (a runaway reply resent whole overflows the context and the retry fails with HTTP 400).
RETRY_EXCERPT_CHARS = 200


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how a judge (or a system under test) is called. Holds the key's variable name only."""

    name: str
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    structured_output: str = "none"  # none | json_object | json_schema
    timeout: float = 60.0
    max_concurrency: int = 8
    max_attempts: int = 5
    temperature: float = 0.0
    # The longest reply asked for; sent on every call (a call may ask for its own). None: DEFAULT_MAX_TOKENS.
    max_tokens: int | None = None


@dataclass
class CallResult:
    text: str
    tool_calls: list[dict] = field(default_factory=list)
    finish_reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    attempts: int = 0
    cached: bool = False

    def assistant_message(self) -> dict:
        """The reply as a message to append to the conversation (tool calls included)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message


@dataclass
class JudgeOutcome:
    """A judge call through parsing: the parsed fields, or the parse error after the one retry."""

    parsed: dict | None
    raw_reply: str
    messages: list[dict]
    parse_error: str = ""
    parse_attempts: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    cached: bool = False
    # The last call's finish_reason: "length" means the reply was cut at the token limit (truncated).
    finish_reason: str = ""
    # No usable verdict because the reply was cut at max_tokens (the last reply, or the first one when the
    # retry got no reply at all).
    truncated: bool = False
    # With --trials K > 1: each trial's verdict and cost (judging/trials.py); None for a single trial.
    trials: list[dict] | None = None

    @property
    def ok(self) -> bool:
        return self.parsed is not None


class ResponseCache(Protocol):
    def get(self, key: str) -> dict | None: ...

    def set(self, key: str, value: dict) -> None: ...


# (judge name, max concurrency, seconds= the longest the call holds its slot) -> context manager. A limiter
# whose own service fails raises ServiceUnavailable, which the client passes on untouched: not the judge's.
Limiter = Callable[..., Any]


class ThreadLimiter:
    """Bounds concurrent calls per judge within one process."""

    def __init__(self):
        self._semaphores: dict[tuple[str, int], threading.BoundedSemaphore] = {}
        self._lock = threading.Lock()

    @contextmanager
    def __call__(self, name: str, max_concurrency: int, *, seconds: float | None = None) -> Iterator[None]:
        with self._lock:
            semaphore = self._semaphores.setdefault(
                (name, max_concurrency), threading.BoundedSemaphore(max(1, max_concurrency))
            )
        with semaphore:
            yield


def cache_key(base_url: str | None, model: str, messages: list[dict], params: dict, *, trial: int = 1) -> str:
    """The response cache's key. Trial 1 is the key every judgment had before trials (caches made then keep
    answering); trial t > 1 (`--trials K`) adds its index, so it is a call of its own, and asking the same
    trial again is answered from the cache. The request sent is the same for every trial."""
    keyed = {"base_url": (base_url or "").rstrip("/"), "model": model, "messages": messages, "params": params}
    if trial > 1:
        keyed["trial"] = trial
    return _canonical_hash(keyed)


def messages_hash(messages: list[dict]) -> str:
    return _canonical_hash(messages)


def _canonical_hash(value: dict | list) -> str:
    """sha256 hex of the value's canonical JSON (keys sorted, no spaces): the same value, the same hash."""
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def reply_excerpt(text: str, limit: int = RETRY_EXCERPT_CHARS) -> str:
    """The start of an unusable reply, as the parse retry shows it to the judge."""
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + " [… cut here]"


def correction_message(error: str, form: str, *, truncated: bool = False) -> str:
    if truncated:
        return f"Your reply could not be used: {error}. Answer again, briefly, with only {form}."
    return f"Your reply could not be used: {error}. Answer again with only {form}."
