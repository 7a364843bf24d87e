from judgeapp.webhooks.cli import WebhooksCommand as Command  # noqa: F401
