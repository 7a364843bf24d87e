from django.urls import path

from judgeapp.datasets import views

app_name = "datasets"

urlpatterns = [
    path("", views.index, name="index"),
    path("testsets/preview/", views.testset_preview, name="testset_preview"),
    path("testsets/save/", views.testset_save, name="testset_save"),
    path("testsets/<uuid:uuid>/", views.testset_detail, name="testset"),
    path("testsets/<uuid:uuid>/download.jsonl", views.testset_download, name="testset_download"),
    path("rubrics/<uuid:uuid>/", views.rubric_detail, name="rubric"),
    path("rubrics/<uuid:uuid>/download/", views.rubric_download, name="rubric_download"),
    path("outputs/preview/", views.outputs_preview, name="outputs_preview"),
    path("outputs/", views.outputs_add, name="outputs_add"),
    path("runs/<str:run_id>/add-cases/", views.cases_add, name="cases_add"),
]
