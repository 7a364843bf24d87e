"""Failed logins are throttled per account and per address (judgeapp/throttle.py): 30 failures give a readable
429 page with Retry-After, the password of a locked account or from a locked address is not even checked, and
a success resets nothing."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from judgeapp.models import AuthFailureCount

pytestmark = pytest.mark.django_db

PASSWORD = "pw-for-tests-1"


def attempt(username: str, password: str, address: str = "198.51.100.7", **headers):
    return Client(REMOTE_ADDR=address).post("/login/", {"username": username, "password": password}, headers=headers)


def fail(times: int, username: str = "rita", address: str = "198.51.100.7"):
    return [attempt(username, "wrong-password", address) for _ in range(times)]


def test_thirty_failed_logins_give_429_with_retry_after_and_a_readable_page(reviewer):
    answers = fail(30)
    assert [a.status_code for a in answers[:29]] == [200] * 29
    assert "didn't match" in answers[0].content.decode()
    locked = answers[29]
    assert locked.status_code == 429
    assert 890 <= int(locked["Retry-After"]) <= 900
    page = locked.content.decode()
    assert "Too many failed logins" in page and "Try again in 15 minutes" in page and "Traceback" not in page
    # Even the right password is refused now, without being checked: guessing on learns nothing.
    right = attempt("rita", PASSWORD)
    assert right.status_code == 429 and "_auth_user_id" not in right.client.session


def test_the_locked_account_stays_locked_from_another_address_and_a_success_elsewhere_unlocks_nothing(reviewer, make_user):
    make_user("vera", "reviewer")
    # Spread over 30 addresses, so that only the account reaches the limit.
    for i in range(30):
        fail(1, "rita", address=f"203.0.113.{i}")
    assert attempt("rita", PASSWORD, address="192.0.2.99").status_code == 429
    # Another account logs in fine from there, and that success does not unlock rita.
    other = attempt("vera", PASSWORD, address="192.0.2.99")
    assert other.status_code == 302 and other["Location"] == "/"
    assert attempt("rita", PASSWORD, address="192.0.2.99").status_code == 429


def test_an_address_that_failed_thirty_times_is_locked_for_every_account(reviewer, make_user):
    make_user("vera", "reviewer")
    for i in range(30):
        fail(1, f"guess-{i}", address="198.51.100.66")
    assert attempt("vera", PASSWORD, address="198.51.100.66").status_code == 429
    # From another address the accounts it tried are not locked (each failed once).
    assert attempt("vera", PASSWORD, address="198.51.100.67").status_code == 302


def test_a_success_before_the_limit_does_not_reset_the_count(reviewer):
    fail(29)
    assert attempt("rita", PASSWORD).status_code == 302  # below the limit the right password works
    assert fail(1)[0].status_code == 429  # and the 30th failure locks as if there had been no success


def test_the_usernames_spelling_does_not_make_another_account(reviewer):
    for i in range(30):
        fail(1, ["rita", "RITA", " Rita", "ｒｉｔａ"][i % 4], address=f"203.0.113.{i}")
    assert attempt("rita", PASSWORD, address="192.0.2.1").status_code == 429


def test_the_lock_ends_with_its_window(reviewer):
    fail(30)
    AuthFailureCount.objects.update(window_start=timezone.now() - timedelta(seconds=901))
    assert attempt("rita", PASSWORD).status_code == 302


def test_the_limit_and_window_are_settings(reviewer, settings):
    settings.AUTH_FAILURE_LIMIT, settings.AUTH_FAILURE_WINDOW_SECONDS = 3, 60
    assert [a.status_code for a in fail(3)] == [200, 200, 429]
    assert 55 <= int(attempt("rita", PASSWORD)["Retry-After"]) <= 60
    settings.AUTH_FAILURE_LIMIT = 0  # off
    assert attempt("rita", PASSWORD).status_code == 302


def test_a_form_without_a_password_guessed_nothing_and_does_not_count(reviewer, settings):
    settings.AUTH_FAILURE_LIMIT = 2
    for _ in range(5):
        assert Client().post("/login/", {"username": "rita", "password": ""}).status_code == 200
    assert not AuthFailureCount.objects.exists()


def test_x_forwarded_for_is_the_clients_own_to_write_unless_proxies_are_trusted(reviewer, settings):
    settings.AUTH_FAILURE_LIMIT = 3
    # Without a trusted proxy, a made-up X-Forwarded-For per request does not make new addresses.
    for i in range(3):
        attempt(f"guess-{i}", "x", address="198.51.100.7", **{"X-Forwarded-For": f"10.9.9.{i}"})
    assert attempt("rita", PASSWORD, address="198.51.100.7").status_code == 429

    # Behind one proxy (127.0.0.1 here), the address is the one the proxy appended; what the client put
    # before it is ignored.
    settings.TRUSTED_PROXY_COUNT = 1
    AuthFailureCount.objects.all().delete()
    for i in range(3):
        attempt(f"guess-{i}", "x", address="127.0.0.1", **{"X-Forwarded-For": f"10.9.9.{i}, 203.0.113.5"})
    assert attempt("rita", PASSWORD, address="127.0.0.1", **{"X-Forwarded-For": "203.0.113.5"}).status_code == 429
    assert attempt("rita", PASSWORD, address="127.0.0.1", **{"X-Forwarded-For": "203.0.113.5, 203.0.113.6"}).status_code == 302


def test_the_admin_signs_in_through_the_throttled_page(client):
    response = client.get("/admin/login/?next=/admin/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=/admin/"


def test_what_was_typed_is_not_stored(reviewer):
    fail(2, username="my-secret-password")
    stored = " ".join(str(row) + row.key_hash for row in AuthFailureCount.objects.all())
    assert AuthFailureCount.objects.count() == 2 and "my-secret" not in stored and "198.51" not in stored
