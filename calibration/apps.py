from django.apps import AppConfig


class CalibrationConfig(AppConfig):
    name = "calibration"
    verbose_name = "Calibration"

    def ready(self):
        from . import signals, tasks  # noqa: F401  (worker start-up catch-up; tasks registered by name)
