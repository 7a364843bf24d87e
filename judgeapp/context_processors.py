from .roles import Role, user_roles


def roles(request):
    held = user_roles(getattr(request, "user", None))
    return {
        "roles": held,
        "is_reader": bool(held & {Role.REVIEWER, Role.LEAD}),
        "is_lead": Role.LEAD in held,
        "is_annotator": Role.ANNOTATOR in held,
    }
