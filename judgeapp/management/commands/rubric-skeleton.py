from judgeapp.web.cli import RubricSkeletonCommand as Command  # noqa: F401
