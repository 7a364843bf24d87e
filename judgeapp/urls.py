from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("judgeapp.web.urls")),
    path("", include("judgeapp.api.urls")),
    path("calibration/", include("calibration.urls")),
    path("ranker/", include("judgeapp.ranker.urls")),
    path("pointwise/", include("judgeapp.pointwise.urls")),
    path("pointwise/", include("judgeapp.releases.urls")),
    path("pairwise/", include("judgeapp.pairwise.urls")),
    path("jury/", include("judgeapp.jury.urls")),
    path("agent/", include("judgeapp.agent.urls")),
    path("blind/", include("judgeapp.blind.urls")),
    path("checkup/", include("judgeapp.checkup.urls")),
    path("admin/", admin.site.urls),
]
