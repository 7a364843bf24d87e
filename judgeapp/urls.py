from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from judgeapp.web import views as shell
urlpatterns = [
    path("", shell.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("runs/", shell.runs_list, name="runs"),
    path("runs/<str:run_id>/", shell.run_detail, name="run_detail"),
    path("runs/<str:run_id>/progress/", shell.run_progress, name="run_progress"),
    path("runs/<str:run_id>/cancel/", shell.run_cancel, name="run_cancel"),
    path("runs/<str:run_id>/judgments/<uuid:judgment_uuid>/", shell.judgment_detail, name="judgment_detail"),
    path("judges/", shell.judges_list, name="judges"),
    path("calibration/", include("calibration.urls")),
    path("blind/", include("judgeapp.blind.urls")),
    path("agent/", include("judgeapp.agent.views")),
    path("pointwise/", include("judgeapp.pointwise.urls")),
    path("pairwise/", include("judgeapp.pairwise.views")),
    path("jury/", include("judgeapp.jury.views")),
    path("admin/", admin.site.urls),
    path("ranker/", include("judgeapp.ranker.urls")),
]
