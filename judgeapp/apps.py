from django.apps import AppConfig

# Each mode's run kind registers its handler with the run machinery when its module is imported.
RUN_KINDS = (
    "judgeapp.pointwise.runkind",
    "judgeapp.pairwise.runkind",
    "judgeapp.jury.runkind",
    "judgeapp.agent.runkind",
    "judgeapp.blind.runkind",
    "judgeapp.ranker.runkind",
    "judgeapp.checkup.runkind",
)
# Registered in every process, so that a service can send a task by name (judgeapp/judging/taskqueue.py).
TASK_MODULES = ("judgeapp.judging.tasks", "judgeapp.ranker.tasks")


class JudgeappConfig(AppConfig):
    name = "judgeapp"
    verbose_name = "Judging"

    def ready(self):
        from importlib import import_module

        from judgeapp.judging import signals  # noqa: F401  (worker start-up recovery)

        for module in RUN_KINDS + TASK_MODULES:
            import_module(module)
