from calibration.cli import AgreementCommand as Command  # noqa: F401
