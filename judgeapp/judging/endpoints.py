"""The client that reaches a judge or a system: its EndpointConfig, and one JudgeClient per endpoint
configuration per process, with the app's shared response cache (the database) and the deployment's
concurrency limiter (judgeapp/judging/limiters.py)."""

import threading

from django.conf import settings
from django.db.models import F

from judgeapp.judging.client import JudgeClient
from judgeapp.judging.judge_calls import EndpointConfig
from judgeapp.judging.limiters import limiter_for_settings
from judgeapp.judging.outages import through_outage
from judgeapp.judging.text import storable
from judgeapp.judging.writeturn import write_turn
from judgeapp.models import CachedResponse, Judge, System


class DatabaseResponseCache:
    """The response cache, shared by every worker on every machine through the database.

    A judge reply is stored as soon as it has been paid for, and read before every call: a unit judged again
    (its claim lost while the database was out of reach, its worker killed) costs no second call. So neither
    fails the judge call when the database refuses: both wait for it to come back (judging/outages.py). A read that gave
    up on the database as a miss would pay again exactly when the reply is most likely stored (a unit taken
    over after a fault); a write that gave up would lose a paid reply."""

    def get(self, key: str) -> dict | None:
        return through_outage(self._get, key, what="reading the response cache")

    def set(self, key: str, value: dict) -> None:
        through_outage(self._set, key, value, what="storing a judge reply in the response cache")

    @staticmethod
    def _get(key: str) -> dict | None:
        cached = CachedResponse.objects.filter(key=key)
        response = cached.values_list("response", flat=True).first()
        if response is not None:
            cached.update(hits=F("hits") + 1)
        return response

    @staticmethod
    def _set(key: str, value: dict) -> None:
        # A reply with a NUL or a lone surrogate is kept as storable() makes it (PostgreSQL's jsonb refuses both).
        with write_turn():
            CachedResponse.objects.bulk_create([CachedResponse(key=key, response=storable(value))], ignore_conflicts=True)


# The longest reply each kind of call asks for, when the judge names no max_tokens of its own: room for the
# verdict and its reasoning, not for a runaway reply that fills the model's context.
MODE_MAX_TOKENS = {
    "pointwise": 512,
    "pairwise": 512,
    "jury": 512,
    "compare": 512,  # the ranker's and `compare`'s WINNER/RATIONALE
    "checkup": 512,
    "blind": 1024,  # a rubric with a score per criterion, then a winner
    "agent": 1024,  # a tool-using turn
    "generate": 1024,  # a system under test writing its reply
}


def max_tokens_for(endpoint: Judge | System, mode: str) -> int:
    """The max_tokens a call of `mode` sends: the endpoint's own, else the mode's default."""
    return endpoint.max_tokens or MODE_MAX_TOKENS[mode]


_cache = DatabaseResponseCache()
_limiter = limiter_for_settings()
_clients: dict[tuple, JudgeClient] = {}
_clients_lock = threading.Lock()


def endpoint_config(endpoint: Judge | System) -> EndpointConfig:
    return EndpointConfig(
        name=endpoint.name,
        model=endpoint.model,
        base_url=endpoint.base_url or settings.OPENAI_BASE_URL or None,
        api_key_env=endpoint.api_key_env,
        structured_output=endpoint.structured_output,
        timeout=endpoint.timeout_seconds,
        max_concurrency=endpoint.max_concurrency,
        max_attempts=settings.JUDGE_MAX_ATTEMPTS,
        max_tokens=endpoint.max_tokens or None,
    )


def client_for(endpoint: Judge | System) -> JudgeClient:
    """One client per endpoint configuration per process (an admin edit gives a new one)."""
    key = (
        type(endpoint).__name__, endpoint.name, endpoint.config_hash, endpoint.max_concurrency, endpoint.timeout_seconds,
        endpoint.max_tokens,
    )
    client = _clients.get(key)  # no lock to read: sixteen lanes ask for it before every call
    if client is None:
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = JudgeClient(
                    endpoint_config(endpoint), cache=_cache, limiter=_limiter, backoff_initial=settings.JUDGE_BACKOFF_SECONDS
                )
                _clients[key] = client
    return client
