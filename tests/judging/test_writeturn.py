"""SQLite's write turn: writers in autocommit queue for it; a write inside a transaction (which holds
SQLite's write lock already, or waits for it) never waits for it, or two processes could wait on each other."""

import threading

import pytest
from django.db import connection

from judgeapp.judging.writeturn import write_turn

pytestmark = pytest.mark.django_db(transaction=True)


def hold_the_turn_in_another_thread():
    holding, release = threading.Event(), threading.Event()

    def hold():
        with write_turn():
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(10)
    return release, thread


def entered_within(seconds: float, atomic: bool) -> bool:
    from django.db import transaction

    entered = threading.Event()

    def write():
        try:
            if atomic:
                with transaction.atomic(), write_turn():
                    entered.set()
            else:
                with write_turn():
                    entered.set()
        finally:
            connection.close()

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return entered.wait(seconds)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the write turn is SQLite's only")
def test_an_autocommit_writer_waits_for_the_turn_and_a_transaction_does_not():
    release, holder = hold_the_turn_in_another_thread()
    try:
        assert entered_within(5, atomic=True)
        assert not entered_within(0.5, atomic=False)
    finally:
        release.set()
        holder.join()
