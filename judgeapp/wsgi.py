import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "judgeapp.settings")
application = get_wsgi_application()


def _warm_up() -> None:
    """Load the URL configuration (the API's schemas alone take most of a second) and compile the run
    pages' templates while the web process starts, not during someone's first request: the first view of a
    report is then as fast as the next. Celery too: the first run started from a page sends a task, and a
    command loads it only when it sends one (judgeapp/judging/taskqueue.py)."""
    from django.template.loader import get_template
    from django.urls import get_resolver

    import judgeapp.celery  # noqa: F401 - loaded now, not on the first run's send
    from judgeapp.judging.runkind import handlers_all

    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 - the property imports every urls module
    # And the tables `{% url %}` reverses names with, the root's and each namespace's (built on first use).
    pending = [resolver]
    while pending:
        current = pending.pop()
        current.reverse_dict  # noqa: B018
        pending += [child for _prefix, child in current.namespace_dict.values()]
    for name in {"judgeapp/web/run_detail.html", "judgeapp/web/dashboard.html", *(h.page_template for h in handlers_all())}:
        get_template(name)


if os.environ.get("WEB_WARM_UP", "1") != "0":
    _warm_up()
