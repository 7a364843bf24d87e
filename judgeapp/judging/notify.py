"""Webhooks: an event becomes one delivery row per webhook that wants it, written in the transaction of the
change it tells (`notify`), and sent by a task after commit (`webhook_delivery_attempt`). docs/webhooks.md.

A message is a JSON POST signed with the webhook's secret (HMAC-SHA256 over "<timestamp>.<body>"), with a
Slack-compatible `text`, so that a Slack incoming webhook takes it as it is. A delivery is claimed with the
one lease (judging/leases.py) before it is sent, so two tasks for it (the retry and the sweep's) send it
once; a worker killed during a POST leaves its claim to lapse, and the sweep sends it again with the same
delivery id (a receiver drops the second by that id). Connection errors, timeouts, 429 (its Retry-After
honoured, bounded) and 5xx are retried with backoff (WEBHOOK_RETRY_SECONDS); any other answer fails it.
"""

from __future__ import annotations

import email.utils
import hashlib
import hmac
import json
import logging
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from judgeapp.judging import taskqueue
from judgeapp.judging.leases import UNIT
from judgeapp.judging.workers import worker_identity
from judgeapp.models import DeliveryStatus, Run, RunStatus, Webhook, WebhookDelivery, WebhookEvent

log = logging.getLogger(__name__)

# The receiver's answer read at most (the rest is not waited for); the log keeps one line of it.
ANSWER_READ_BYTES = 4096
ERROR_LINE_MAX = 300
# A pending delivery this far past its time has lost its task (a worker killed, a broker that lost it):
# the sweep sends it again.
OVERDUE_SECONDS = 60
USER_AGENT = "judgeapp-webhooks/1"


# --- Events --------------------------------------------------------------------------------------------


def slack_escaped(text: str) -> str:
    """Text as Slack reads it literally: its control characters &, < and > escaped, so a run's title cannot
    become a link or an @channel mention (api.slack.com, "Escaping text")."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def site_link(path: str) -> str:
    return f"{settings.SITE_URL}{path}"


def notify(*, event: str, data: dict, line: str, path: str, webhooks=None) -> list[WebhookDelivery]:
    """Queue `event` for every active webhook that wants it (or for `webhooks`). Call it in the transaction
    of the change it tells: the rows are written with it and their tasks are sent after it commits.

    `line` is the message in plain words (escaped here for Slack); `path` the page it is about, linked."""
    if webhooks is None:
        webhooks = [hook for hook in Webhook.objects.filter(active=True).order_by("pk") if event in hook.events]
    if not webhooks:
        return []
    url = site_link(path)
    line = line[:1].upper() + line[1:]
    payload = {"data": {**data, "url": url}, "text": f"{slack_escaped(line)} <{url}|Open in judgeapp>"}
    now = timezone.now()
    deliveries = WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(webhook=hook, event=event, payload=payload, next_attempt_at=now) for hook in webhooks]
    )
    ids = [d.pk for d in deliveries]  # bulk_create sets them (RETURNING, on PostgreSQL and SQLite alike)
    transaction.on_commit(lambda: _send_tasks(ids))
    return deliveries


def _send_tasks(ids: list[int], countdown: float | None = None) -> None:
    for pk in ids:
        try:
            taskqueue.send(taskqueue.DELIVER_WEBHOOK, pk, **({"countdown": countdown} if countdown else {}))
        except taskqueue.BrokerDown as exc:
            # Kept pending: the workers' sweep sends it once the broker is back.
            log.warning("webhook delivery %s not sent now: %s", pk, exc)
            return


def _run_facts(run: Run) -> dict:
    return {
        "run_id": run.run_id,
        "kind": run.kind,
        "title": run.title,
        "status": run.status,
        "system": run.system.name if run.system_id else None,
        "judge": run.judge.name if run.judge_id else None,
    }


def _run_named(run: Run) -> str:
    title = f" “{run.title}”" if run.title else ""
    return f"{run.get_kind_display()} run {run.run_id}{title}"


def run_ended_notify(*, run_pk: int) -> None:
    """A run that ended failed or invalid, and a finished run's gate: the events they are. Called once per
    run, by whichever write moved it to its end (a conditional UPDATE wins once), in its transaction. The
    active webhooks are read once for every event the run makes."""
    hooks = list(Webhook.objects.filter(active=True).order_by("pk"))
    if not hooks:
        return
    run = Run.objects.select_related("system", "judge").get(pk=run_pk)
    path = f"/runs/{run.run_id}/"

    def told(event: str, *, data: dict, line: str) -> None:
        notify(event=event, data=data, line=line, path=path, webhooks=[hook for hook in hooks if event in hook.events])

    facts = _run_facts(run)
    named = _run_named(run)
    report = run.report or {}
    if run.status == RunStatus.FAILED:
        error = " ".join((run.error or "no reason given").split())[:300]
        told(WebhookEvent.RUN_FAILED, data={**facts, "error": error}, line=f"{named} failed: {error}")
    elif run.status == RunStatus.INVALID:
        reasons = report.get("invalid_reasons") or []
        said = "; ".join(reasons)[:300] or "too many replies without a usable verdict"
        told(WebhookEvent.RUN_INVALID, data={**facts, "reasons": reasons[:20]}, line=f"{named} is invalid: {said}")
    gate = report.get("gate")
    if not (isinstance(gate, dict) and "passed" in gate):
        return
    mean, threshold, reasons = report.get("mean"), gate.get("threshold"), gate.get("reasons") or []
    figures = f"mean {mean:.2f}, threshold {threshold}" if isinstance(mean, (int, float)) else f"threshold {threshold}"
    data = {**facts, "passed": bool(gate["passed"]), "mean": mean, "threshold": threshold, "reasons": reasons[:20]}
    if gate["passed"]:
        told(WebhookEvent.GATE_PASSED, data=data, line=f"Release gate passed: {named} ({figures}).")
    else:
        because = "; ".join(reasons)[:300]
        told(WebhookEvent.GATE_BLOCKED, data=data, line=f"Release gate blocked: {named} ({figures}): {because}")


# --- Sending -------------------------------------------------------------------------------------------


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The X-Judgeapp-Signature value: HMAC-SHA256 of "<timestamp>.<body>" with the webhook's secret."""
    digest = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def message_of(delivery: WebhookDelivery, *, now=None) -> tuple[bytes, dict]:
    """The body and headers of one attempt."""
    now = now or timezone.now()
    body = json.dumps(
        {
            "event": delivery.event,
            "delivery": str(delivery.uuid),
            "sent_at": now.isoformat(),
            "data": delivery.payload.get("data", {}),
            "text": delivery.payload.get("text", ""),
        },
        ensure_ascii=False,
        separators=(",", ":"),
    ).encode("utf-8")
    timestamp = str(int(now.timestamp()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Judgeapp-Event": delivery.event,
        "X-Judgeapp-Delivery": str(delivery.uuid),
        "X-Judgeapp-Timestamp": timestamp,
        "X-Judgeapp-Signature": signature(delivery.webhook.secret, timestamp, body),
    }
    return body, headers


def _one_line(text: str) -> str:
    return " ".join(text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8").split())


def _retry_after(value: str | None) -> float | None:
    """A Retry-After header's wait in seconds (a number or an HTTP date), or None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - timezone.now()).total_seconds())


def _post(url: str, body: bytes, headers: dict) -> tuple[int | None, str, float | None]:
    """POST once: (status code or None, one line about what happened, the Retry-After wait or None).
    Each socket wait is bounded by WEBHOOK_TIMEOUT_SECONDS, and so is reading the answer, whatever the
    receiver trickles; redirects are not followed."""
    import httpx2  # openai's HTTP library, loaded only where a message is sent

    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    deadline = time.monotonic() + timeout
    try:
        with httpx2.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
            with client.stream("POST", url, content=body, headers=headers) as response:
                answer = b""
                for chunk in response.iter_bytes():
                    answer += chunk
                    if len(answer) >= ANSWER_READ_BYTES or time.monotonic() > deadline:
                        break
                line = _one_line(answer[:200].decode("utf-8", "replace"))
                said = f"HTTP {response.status_code}" + (f": {line}" if line else "")
                return response.status_code, said, _retry_after(response.headers.get("retry-after"))
    except httpx2.TimeoutException:
        return None, f"no answer within {timeout:g} s", None
    except httpx2.HTTPError as exc:
        return None, f"could not connect: {_one_line(str(exc)) or type(exc).__name__}", None
    except (httpx2.InvalidURL, ValueError, UnicodeError) as exc:
        # An address the HTTP library refuses: no try would change that (a 0 is no retry, see _retriable).
        return 0, f"could not send to this address: {_one_line(str(exc)) or type(exc).__name__}", None


def _retriable(code: int | None) -> bool:
    """No answer (None), 429 or 5xx; an answer that says no, or an address that cannot be sent to (0), is final."""
    return code is None or code == 429 or code >= 500


def webhook_delivery_attempt(*, delivery_pk: int) -> str | None:
    """Send a due delivery once, if no one else is: its new status, or None when it was not taken (sent,
    failed, not yet due, or another sender holds it). A retriable failure schedules the next attempt and
    sends its task with that countdown; the last attempt's failure fails it."""
    now = timezone.now()
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    rows = WebhookDelivery.objects.filter(pk=delivery_pk)
    # A webhook switched off gets nothing more (its test message aside: a lead may try one before switching it on).
    wanted = Q(webhook__active=True) | Q(event=WebhookEvent.TEST)
    due = Q(status=DeliveryStatus.PENDING, next_attempt_at__lte=now) & UNIT.free(now) & wanted
    claim, taken = UNIT.take(rows, holder=worker_identity(), seconds=3 * timeout + 30, free=due, attempts=F("attempts") + 1)
    if not taken:
        return None
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=delivery_pk)
    body, headers = message_of(delivery)
    code, line, retry_after = _post(delivery.webhook.url, body, headers)
    finished = timezone.now()
    values = {"last_status_code": code or None, "last_error": "" if code and 200 <= code < 300 else line[:ERROR_LINE_MAX],
              "updated_at": finished}
    waits = settings.WEBHOOK_RETRY_SECONDS
    countdown = None
    if code is not None and 200 <= code < 300:
        values.update(status=DeliveryStatus.DELIVERED, delivered_at=finished, next_attempt_at=None)
    elif _retriable(code) and delivery.attempts <= len(waits):
        wait = waits[delivery.attempts - 1]
        if code == 429 and retry_after is not None:
            wait = max(wait, min(retry_after, settings.WEBHOOK_RETRY_AFTER_MAX_SECONDS))
        values.update(next_attempt_at=finished + timedelta(seconds=wait))
        countdown = wait
    else:
        if not _retriable(code):
            values["last_error"] = f"{line} (not retried: only timeouts, connection errors, 429 and 5xx are)"[:ERROR_LINE_MAX]
        values.update(status=DeliveryStatus.FAILED, next_attempt_at=None)
    status = values.get("status", DeliveryStatus.PENDING)
    UNIT.release(rows, claim, **values)
    log.info(
        "webhook %s (%s) %s delivery %s: %s", delivery.webhook.name, delivery.webhook.shown_url, delivery.event, delivery.uuid,
        line
    )
    if countdown is not None:
        _send_tasks([delivery_pk], countdown=countdown or None)
    return status


def webhook_deliveries_recover(*, overdue_seconds: float = OVERDUE_SECONDS) -> int:
    """Send again the pending deliveries whose time is past by `overdue_seconds` and that no one holds: their
    task was lost (a worker killed, the broker down). Run with the workers' recovery pass. How many."""
    now = timezone.now()
    lost = (
        WebhookDelivery.objects.filter(
            status=DeliveryStatus.PENDING, next_attempt_at__lte=now - timedelta(seconds=overdue_seconds)
        )
        .filter(UNIT.free(now))
        .filter(Q(webhook__active=True) | Q(event=WebhookEvent.TEST))
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:500]
    )
    ids = list(lost)
    _send_tasks(ids)
    return len(ids)
