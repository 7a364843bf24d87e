"""`manage.py webhooks list|add|test`: the webhooks page's work from a shell (docs/webhooks.md). A new
webhook's secret is printed once; every addition is in the audit log, by `cli:<os user>`."""

import sys

from judgeapp.judging.audit import cli_actor
from judgeapp.judging.cli import EXIT_FAILED, JudgeCommand
from judgeapp.judging.errors import InputError
from judgeapp.models import DeliveryStatus
from judgeapp.models.webhooks import SUBSCRIBABLE_EVENTS
from judgeapp.webhooks import selectors, services


class WebhooksCommand(JudgeCommand):
    help = "List webhooks, add one (its signing secret printed once) or send one a test message."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        actions.add_parser("list", help="list the webhooks (name, address, events, on or off)")
        add = actions.add_parser("add", help="add a webhook and print its signing secret (only this once)")
        add.add_argument("name", metavar="NAME", help="what it is, e.g. release-channel")
        add.add_argument("url", metavar="URL", help="the receiver's address, http:// or https://")
        add.add_argument("--event", action="append", choices=SUBSCRIBABLE_EVENTS, metavar="EVENT",
                         help=f"an event to send it (repeat for more; default all: {', '.join(SUBSCRIBABLE_EVENTS)})")
        test = actions.add_parser("test", help="send a webhook a test message now and say the receiver's answer")
        test.add_argument("name", metavar="NAME", help="the webhook's name, as `list` shows it")

    def handle(self, *args, **options):
        getattr(self, f"_{options['action']}")(options)

    def _list(self, options):
        hooks = list(selectors.webhook_list())
        for hook in hooks:
            state = "on" if hook.active else "off"
            self.stdout.write(f"{hook.name}  {hook.shown_url}  {','.join(hook.events)}  {state}")
        self.stderr.write(f"{len(hooks)} webhook(s)")

    def _add(self, options):
        hook, secret = services.webhook_create(
            name=options["name"], url=options["url"], events=options["event"], actor=cli_actor()
        )
        self.stdout.write(secret)
        self.stderr.write(
            f"webhook {hook.name} ({hook.shown_url}) added for {', '.join(hook.events)}; its signing secret is above, store it "
            f"now: it is not shown again"
        )

    def _test(self, options):
        hook = selectors.webhook_for_name(name=options["name"])
        if hook is None:
            raise InputError(f"no webhook {options['name']!r} (see `manage.py webhooks list`)")
        delivery = services.webhook_test_send(webhook=hook, actor=cli_actor())
        if delivery.status == DeliveryStatus.DELIVERED:
            self.stdout.write(f"test message delivered to {hook.name}: the receiver answered {delivery.last_status_code}")
            return
        self.stderr.write(f"error: test message to {hook.name} not delivered: {delivery.last_error}")
        sys.exit(EXIT_FAILED)
