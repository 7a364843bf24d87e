from django.apps import AppConfig


class JudgeappConfig(AppConfig):
    name = "judgeapp"
    verbose_name = "Judging"

    def ready(self):
        from . import signals  # noqa: F401  (worker start-up recovery)
