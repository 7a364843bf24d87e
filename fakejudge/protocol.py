"""The request a fake judge receives and the response it sends: shared by the server and its brains."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

SCRIPTED_NOTE = "[scripted demo judge, not a language model]"


@dataclass
class FakeRequest:
    path: str
    body: dict
    headers: dict
    received_at: float = field(default_factory=time.time)

    @property
    def model(self) -> str:
        return self.body.get("model", "")

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages", [])

    @property
    def prompt(self) -> str:
        """The first user message: the rendered judge prompt."""
        for message in self.messages:
            if message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""

    @property
    def all_text(self) -> str:
        return "\n".join(_content_text(m.get("content")) for m in self.messages)

    @property
    def conversation_key(self) -> str:
        """Same for a first call and its retries or tool-call follow-ups."""
        return hashlib.sha256(self.prompt.encode("utf-8")).hexdigest()

    @property
    def tool_names(self) -> list[str]:
        return [t.get("function", {}).get("name", "") for t in self.body.get("tools") or []]

    @property
    def tool_results(self) -> list[dict]:
        return [m for m in self.messages if m.get("role") == "tool"]


def _content_text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    hang: float = 0.0
    # A body that keeps coming: after `body`, each piece is written `drip_interval` seconds after the last
    # (chunked transfer), until the pieces run out, the client leaves or the server stops.
    drip: Iterable[bytes] | None = None
    drip_interval: float = 0.0


Action = Callable[[FakeRequest], Response]


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def completion(
    request: FakeRequest, content: str | None, tool_calls: list[dict] | None = None, *, finish_reason: str | None = None
) -> Response:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body = {
        "id": f"chatcmpl-fake-{int(time.time() * 1000)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop")}],
        "usage": {
            "prompt_tokens": _estimate_tokens(request.all_text),
            "completion_tokens": _estimate_tokens(content or json.dumps(tool_calls)),
            "total_tokens": 0,
        },
    }
    body["usage"]["total_tokens"] = body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
    return Response(body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})


# --- Actions --------------------------------------------------------------------------------------------


def make_tool_calls(calls) -> list[dict]:
    return [
        {
            "id": f"call_{hashlib.sha256(f'{name}{args}{i}{time.time()}'.encode()).hexdigest()[:12]}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for i, (name, args) in enumerate(calls)
    ]
