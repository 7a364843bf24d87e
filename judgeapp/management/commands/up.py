from judgeapp.demo.cli import UpCommand as Command  # noqa: F401
