from calibration.cli import ImportPandalmCommand as Command  # noqa: F401
