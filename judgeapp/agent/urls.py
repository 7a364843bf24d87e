from django.urls import path

from judgeapp.agent import views

app_name = "agent"

urlpatterns = [
    path("", views.agent_home, name="home"),
    path("<str:run_id>/requirements/", views.agent_requirements, name="requirements"),
    path("<str:run_id>/requirements/<uuid:judgment_uuid>/", views.agent_transcript, name="transcript"),
    path("<str:run_id>/report.json", views.agent_report, name="report"),
]
