from judgeapp.agent.cli import AgentJudgeCommand as Command  # noqa: F401
