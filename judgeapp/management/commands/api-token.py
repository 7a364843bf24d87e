from judgeapp.api.cli import ApiTokenCommand as Command  # noqa: F401
