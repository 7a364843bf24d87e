from judgeapp.web.cli import PromptsCommand as Command  # noqa: F401
