from calibration.cli import ImportLabelsCommand as Command  # noqa: F401
