"""The browser's side of the API: the profile page, where a user makes and revokes their tokens (a new
token is shown once) and sees each one's last use; and the browsable docs of /api/v1/."""

import json

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from judgeapp.api import selectors, services
from judgeapp.api.forms import TokenCreateForm
from judgeapp.judging.pages import HtmxHttpRequest, page_redirect
from judgeapp.roles import READERS, has_role, role_required, user_roles


@never_cache  # the page that shows a new token must not stay in any cache
def profile(request: HtmxHttpRequest) -> HttpResponse:
    """Any user's tokens (an annotator may revoke one made while they were a reviewer); only reviewers and
    leads make new ones, since the API is theirs."""
    can_create = has_role(request.user, *READERS)
    form = TokenCreateForm(request.POST or None)
    created = None
    if request.method == "POST":
        if not can_create:
            raise PermissionDenied
        if form.is_valid():
            row, token = services.api_token_create(user=request.user, name=form.cleaned_data["name"], actor=request.user)
            created = {"row": row, "token": token}
            form = TokenCreateForm()
    context = {
        "tokens": selectors.token_list_for_user(user=request.user),
        "form": form,
        "created": created,
        "can_create": can_create,
        "roles": sorted(user_roles(request.user)),
        "api_root": request.build_absolute_uri("/api/v1/"),
    }
    return render(request, "judgeapp/api/profile.html", context, status=400 if form.errors else 200)


@require_POST
def token_revoke(request: HtmxHttpRequest, uuid) -> HttpResponse:
    token = selectors.token_for_user(user=request.user, uuid=uuid)
    if services.api_token_revoke(token=token, actor=request.user):
        messages.success(request, f"Token {token.name} ({token.shown}) revoked: requests with it now get 401.")
    else:
        messages.info(request, f"Token {token.name} was already revoked.")
    return page_redirect(request, reverse("api:profile"))


@role_required(*READERS)
def docs(request: HtmxHttpRequest) -> HttpResponse:
    """Swagger UI on /api/v1/openapi.json (django-ninja's page and its bundled scripts, nothing from a CDN)."""
    settings = {"url": reverse("api:v1:openapi-json"), "layout": "BaseLayout", "deepLinking": True, "persistAuthorization": False}
    context = {"swagger_settings": json.dumps(settings), "api": {"title": "judgeapp API"}, "add_csrf": False}
    return render(request, "ninja/swagger.html", context)
