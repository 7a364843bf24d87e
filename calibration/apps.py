from django.apps import AppConfig


class CalibrationConfig(AppConfig):
    name = "calibration"
    verbose_name = "Calibration"

    def ready(self):
        from judgeapp.judging.runkind import modules_declare

        modules_declare({"candidate": "calibration.runkind"})  # the candidate run kind, imported on first use
