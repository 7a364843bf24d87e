"""The three roles of CONTRACT §5, as Django groups, and the check every view makes."""

from functools import wraps

from django.core.exceptions import PermissionDenied
from django.db import models


class Role(models.TextChoices):
    REVIEWER = "reviewer", "reviewer: starts runs, reads reports"
    ANNOTATOR = "annotator", "annotator: blind scoring only"
    LEAD = "lead", "lead: approves or blocks releases, recalibrates"


def user_roles(user) -> set[str]:
    if not getattr(user, "is_authenticated", False):
        return set()
    if user.is_superuser:
        return set(Role.values)
    cached = getattr(user, "_judgeapp_roles", None)
    if cached is None:
        cached = set(user.groups.filter(name__in=Role.values).values_list("name", flat=True))
        user._judgeapp_roles = cached
    return cached


def has_role(user, *roles: str) -> bool:
    return bool(user_roles(user) & set(roles))


def role_required(*roles: str):
    """403 unless the user holds one of the roles. Login itself is enforced by the middleware."""

    def decorator(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not has_role(request.user, *roles):
                raise PermissionDenied
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


# Who may read what: reports and run pages are for reviewers and leads; annotators see only their queue.
READERS = (Role.REVIEWER, Role.LEAD)
