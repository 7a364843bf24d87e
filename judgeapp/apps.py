from django.apps import AppConfig

# The module that registers each run kind's handler with the run machinery; imported when the kind is
# first needed (judgeapp/judging/runkind.py: handler_for), not when Django starts.
RUN_KINDS = {
    "pointwise": "judgeapp.pointwise.runkind",
    "pairwise": "judgeapp.pairwise.runkind",
    "jury": "judgeapp.jury.runkind",
    "agent": "judgeapp.agent.runkind",
    "blind": "judgeapp.blind.runkind",
    "rank": "judgeapp.ranker.runkind",
    "compare": "judgeapp.ranker.runkind",
    "checkup": "judgeapp.checkup.runkind",
}


class JudgeappConfig(AppConfig):
    name = "judgeapp"
    verbose_name = "Judging"

    def ready(self):
        from judgeapp.judging.runkind import modules_declare

        modules_declare(RUN_KINDS)
