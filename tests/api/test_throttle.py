"""Failed API tokens are throttled per account and per address (judgeapp/throttle.py): 30 wrong tokens give
429 JSON {error, detail} with Retry-After, a locked address or account gets 429 before its token is checked,
and the login page's counts and the API's are kept apart."""

import pytest
from django.test import Client

from judgeapp.api.services import api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db


def call(token: str | None, address: str = "198.51.100.7", path: str = "/api/v1/token"):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return Client(REMOTE_ADDR=address).get(path, headers=headers)


def wrong_secret(token: str) -> str:
    scheme, prefix, _ = token.split("_", 2)
    return f"{scheme}_{prefix}_{'x' * 43}"


def test_thirty_failed_tokens_give_429_json_with_retry_after(reviewer):
    answers = [call(f"ja_{i:012x}_not-a-secret") for i in range(30)]
    assert [a.status_code for a in answers[:29]] == [401] * 29
    locked = answers[29]
    assert locked.status_code == 429 and locked["Content-Type"] == "application/json"
    body = locked.json()
    assert body["error"] == "too_many_requests" and "try again in 15 minutes" in body["detail"]
    assert 890 <= int(locked["Retry-After"]) <= 900
    # A good token from that address is refused too, before it is checked.
    good = api_token_create(user=reviewer, name="ci")[1]
    assert call(good).status_code == 429
    assert call(good, address="198.51.100.8").status_code == 200


def test_a_wrong_secret_after_a_real_prefix_counts_against_the_tokens_user_from_every_address(reviewer):
    good = api_token_create(user=reviewer, name="ci")[1]
    other = api_token_create(user=reviewer, name="other")[1]
    for i in range(30):
        assert call(wrong_secret(good), address=f"203.0.113.{i}").status_code in (401, 429)
    # The account is locked, whichever of its tokens and wherever from, until the window ends.
    assert call(good, address="192.0.2.1").status_code == 429
    assert call(other, address="192.0.2.1").status_code == 429


def test_a_revoked_token_counts_against_its_address_only(reviewer):
    row, old = api_token_create(user=reviewer, name="old")
    api_token_revoke(token=row)
    new = api_token_create(user=reviewer, name="new")[1]
    for i in range(30):
        assert call(old, address=f"203.0.113.{i}").status_code == 401  # its secret is right: nobody guessed it
    assert call(new, address="192.0.2.1").status_code == 200


def test_the_other_answers_under_api_are_throttled_too(reviewer, settings):
    settings.AUTH_FAILURE_LIMIT = 2
    call("ja_000000000000_x")
    assert call("ja_000000000000_x", path="/api/v1/no-such-endpoint").status_code == 429
    answer = call("ja_000000000000_x", path="/api/v1/no-such-endpoint")
    assert answer.status_code == 429 and answer.json()["error"] == "too_many_requests" and answer["Retry-After"]


def test_a_request_without_a_token_guessed_nothing(reviewer, settings):
    settings.AUTH_FAILURE_LIMIT = 2
    for _ in range(5):
        assert call(None).status_code == 401
    good = api_token_create(user=reviewer, name="ci")[1]
    assert call(good).status_code == 200


def test_failed_logins_and_failed_tokens_are_counted_apart(reviewer, settings):
    settings.AUTH_FAILURE_LIMIT = 3
    for _ in range(3):
        call("ja_000000000000_x")
    assert call("ja_000000000000_x").status_code == 429
    login = Client(REMOTE_ADDR="198.51.100.7").post("/login/", {"username": "rita", "password": "pw-for-tests-1"})
    assert login.status_code == 302
