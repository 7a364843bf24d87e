from django.urls import path

from judgeapp.releases import views

app_name = "releases"

# Under pointwise/, where they have always been: the gate is a pointwise run's.
urlpatterns = [
    path("releases/", views.releases, name="releases"),
    path("releases/policy/", views.release_policy_set, name="policy"),
    path("compare/", views.runs_compare, name="compare"),
    path("runs/<str:run_id>/gate/", views.gate, name="gate"),
    path("runs/<str:run_id>/gate/decide/", views.gate_decide, name="decide"),
    path("runs/<str:run_id>/release/", views.release_mark, name="release"),
]
