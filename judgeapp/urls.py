from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.generic import RedirectView

from judgeapp.web.views import LoginView

urlpatterns = [
    path("login/", LoginView.as_view(), name="login"),
    # The admin signs in through the same throttled page (its own login form would be a way around it).
    path("admin/login/", login_not_required(RedirectView.as_view(pattern_name="login", query_string=True))),
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
    path("webhooks/", include("judgeapp.webhooks.urls")),
    path("datasets/", include("judgeapp.datasets.urls")),
    path("admin/", admin.site.urls),
]
