"""judgeapp/throttle.py: the address a failure counts against, and counts that add up when failures arrive at
the same moment from several processes (here: threads, each with its own database connection)."""

import threading

import pytest
from django.db import connection
from django.test import RequestFactory

from judgeapp.models import AuthFailureCount
from judgeapp.throttle import Scope, ThrottleKey, auth_failure_record, client_address


def address_of(remote: str, forwarded: str | None = None) -> str:
    meta = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return client_address(RequestFactory().get("/", **meta))


def test_the_address_is_remote_addr_and_x_forwarded_for_only_behind_trusted_proxies(settings):
    assert address_of("198.51.100.7", "10.0.0.1") == "198.51.100.7"
    settings.TRUSTED_PROXY_COUNT = 1
    assert address_of("127.0.0.1", "10.0.0.1, 198.51.100.7") == "198.51.100.7"
    settings.TRUSTED_PROXY_COUNT = 2
    assert address_of("127.0.0.1", "10.0.0.1, 198.51.100.7, 192.0.2.1") == "198.51.100.7"
    assert address_of("127.0.0.1", "198.51.100.9") == "198.51.100.9"  # fewer entries than proxies: the outermost
    assert address_of("127.0.0.1") == "127.0.0.1"


def test_an_ipv6_address_counts_as_its_64():
    assert address_of("2001:db8:1:2:aaaa::1") == address_of("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert address_of("2001:db8:1:3::1") != address_of("2001:db8:1:2::1")
    assert address_of("::ffff:198.51.100.7") == "198.51.100.7"


@pytest.mark.django_db(transaction=True)
def test_failures_at_the_same_moment_all_count(settings):
    settings.AUTH_FAILURE_LIMIT = 1000
    keys = [
        ThrottleKey(Scope.LOGIN, AuthFailureCount.Kind.ACCOUNT, "rita"),
        ThrottleKey(Scope.LOGIN, AuthFailureCount.Kind.ADDRESS, "198.51.100.7"),
    ]
    barrier = threading.Barrier(4)

    def fail_ten_times():
        try:
            barrier.wait(10)
            for _ in range(10):
                auth_failure_record(keys=keys)
        finally:
            connection.close()

    threads = [threading.Thread(target=fail_ten_times) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(AuthFailureCount.objects.values_list("failures", flat=True)) == [40, 40]
