from judgeapp.agent.cli import DevaiAgreementCommand as Command  # noqa: F401
