from django.urls import path

from judgeapp.pointwise import views

app_name = "pointwise"

urlpatterns = [
    path("", views.evaluation_new, name="new"),
    path("estimate/", views.evaluation_estimate, name="estimate"),
    path("rubric-draft/", views.rubric_skeleton, name="rubric_skeleton"),
    path("runs/<str:run_id>/judgments/", views.judgments, name="judgments"),
    path("runs/<str:run_id>/report.<str:fmt>", views.export, name="export"),
]
