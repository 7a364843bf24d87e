from django.apps import AppConfig


class CalibrationConfig(AppConfig):
    name = "calibration"
    verbose_name = "Calibration"

    def ready(self):
        from . import runkind, signals, tasks  # noqa: F401  (the candidate run kind; worker start-up catch-up; tasks by name)
