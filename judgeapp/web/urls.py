"""The shell's pages: the dashboard of runs, a run's page with its progress, a judgment, the judges,
the prompt library.
Their names are not namespaced (`run_detail`, `judges`): every mode's pages link to them."""

from django.urls import path

from judgeapp.web import views

urlpatterns = [
    path("", views.home, name="home"),
    path("runs/", views.runs_list, name="runs"),
    path("runs/<str:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<str:run_id>/progress/", views.run_progress, name="run_progress"),
    path("runs/<str:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<str:run_id>/tags/", views.run_tag_add, name="run_tag_add"),
    path("runs/<str:run_id>/tags/<str:name>/remove/", views.run_tag_remove, name="run_tag_remove"),
    path("runs/<str:run_id>/judgments/<uuid:judgment_uuid>/", views.judgment_detail, name="judgment_detail"),
    path("help/", views.glossary, name="glossary"),
    path("prompts/", views.prompts_list, name="prompts"),
    path("prompts/new/", views.prompt_new, name="prompt_new"),
    path("prompts/built-in/<str:mode>/", views.prompt_builtin, name="prompt_builtin"),
    path("prompts/<uuid:prompt_uuid>/", views.prompt_detail, name="prompt_detail"),
    path("judges/", views.judges_list, name="judges"),
    path("judges/reload/", views.judges_reload, name="judges_reload"),
    path("judges/<str:name>/", views.judge_scorecard, name="judge_scorecard"),
    path("judges/<str:name>/<str:version>/", views.judge_scorecard, name="judge_scorecard_version"),
]
