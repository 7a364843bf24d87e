from django.urls import path

from judgeapp.ranker import views as ranker

app_name = "ranker"

urlpatterns = [
    path("", ranker.index, name="index"),
    path("rank/", ranker.rank_new, name="rank_new"),
    path("compare/", ranker.compare_new, name="compare_new"),
    path("ranklists/<uuid:ranklist_uuid>/state/", ranker.ranklist_state, name="state"),
    path("ranklists/<uuid:ranklist_uuid>/insert/", ranker.ranklist_insert, name="insert"),
    path("ranklists/<uuid:ranklist_uuid>/resume/", ranker.ranklist_resume, name="resume"),
    path("runs/<str:run_id>/artifacts/<int:artifact_pk>/", ranker.artifact_detail, name="artifact"),
]
