from django.urls import path

from judgeapp.pointwise import views as views
app_name = "pointwise"

urlpatterns = [
    path("", views.evaluation_new, name="new"),
    path("releases/", views.releases, name="releases"),
    path("runs/<str:run_id>/judgments/", views.judgments, name="judgments"),
    path("runs/<str:run_id>/gate/", views.gate, name="gate"),
    path("runs/<str:run_id>/gate/decide/", views.gate_decide, name="decide"),
    path("runs/<str:run_id>/release/", views.release_mark, name="release"),
    path("runs/<str:run_id>/report.<str:fmt>", views.export, name="export"),
]
