"""Fixtures for the API's tests: tokens of users with roles, and a client that sends one."""

import pytest
from django.test import Client

from judgeapp.api.services import api_token_create


@pytest.fixture
def token_for(db):
    def make(user, name="ci") -> str:
        return api_token_create(user=user, name=name)[1]

    return make


class ApiClient:
    """Django's test client with a Bearer token and CSRF checks on, as a CI job's curl would meet them."""

    def __init__(self, token: str | None):
        self.client = Client(enforce_csrf_checks=True)
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, path, **kw):
        return self.client.get(path, headers={**self.headers, **kw.pop("headers", {})}, **kw)

    def post(self, path, data=None, **kw):
        return self.client.post(path, data or {}, headers={**self.headers, **kw.pop("headers", {})}, **kw)


@pytest.fixture
def api_as(token_for):
    """api_as(user) -> a client that sends a fresh token of that user; api_as(None) sends none."""

    def make(user=None, *, token: str | None = None) -> ApiClient:
        if token is None and user is not None:
            token = token_for(user)
        return ApiClient(token)

    return make


@pytest.fixture
def no_celery(monkeypatch):
    """Runs the API starts are queued for Celery; record what would be sent instead of sending it."""
    from judgeapp.judging import taskqueue

    sent = []
    monkeypatch.setattr(taskqueue, "send", lambda name, *args: sent.append((name, *args)))
    return sent
