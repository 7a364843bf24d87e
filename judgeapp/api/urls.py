"""/api/v1/ (the JSON API; anything else under /api/ answers JSON too), the profile page with the user's
tokens, and the API's browsable docs."""

from django.urls import path, re_path

from judgeapp.api.views import base, endpoints, pages

app_name = "api"

urlpatterns = [
    path("api/v1/", base.api_urls(endpoints.router)),
    re_path(r"^api(?:/.*)?$", base.not_found),
    path("profile/", pages.profile, name="profile"),
    path("profile/tokens/<uuid:uuid>/revoke/", pages.token_revoke, name="token_revoke"),
    path("api-docs/", pages.docs, name="docs"),
]
