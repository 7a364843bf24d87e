from django.urls import path

from judgeapp.datasets import views

app_name = "datasets"

urlpatterns = [
    path("", views.index, name="index"),
    path("testsets/preview/", views.testset_preview, name="testset_preview"),
    path("testsets/save/", views.testset_save, name="testset_save"),
    path("testsets/<uuid:uuid>/", views.testset_detail, name="testset"),
    path("testsets/<uuid:uuid>/download.jsonl", views.testset_download, name="testset_download"),
    path("rubrics/preview/", views.rubric_preview, name="rubric_preview"),
    path("rubrics/save/", views.rubric_save, name="rubric_save"),
    path("rubrics/<uuid:uuid>/", views.rubric_detail, name="rubric"),
    path("rubrics/<uuid:uuid>/download/", views.rubric_download, name="rubric_download"),
    path("outputs/preview/", views.outputs_preview, name="outputs_preview"),
    path("outputs/", views.outputs_add, name="outputs_add"),
    path("outputs/<uuid:uuid>/", views.outputs_detail, name="outputs"),
    path("outputs/<uuid:uuid>/download.jsonl", views.outputs_download, name="outputs_download"),
    path("artifact-sets/<uuid:uuid>/", views.artifact_set_detail, name="artifact_set"),
    path("artifact-sets/<uuid:uuid>/download.zip", views.artifact_set_download, name="artifact_set_download"),
    path("runs/<str:run_id>/add-cases/", views.cases_add, name="cases_add"),
]
