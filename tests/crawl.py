"""Every page of the demo a role reaches: the demo data (`demo`, a module-scoped fixture) and the crawl over it.

The pages are found by following every link from each role's home and the menu (GET only, same site), over the
demo `up` loads (judgeapp/demo), judged by the scripted demo judge. The vocabulary test reads each page's words,
the browser tests check each page's accessibility and layout."""

import html as html_lib
import re
from urllib.parse import urldefrag, urlsplit

import pytest
from django.test import Client

SKIP = ("/admin/", "/logout/", "/static/", "/api/v1/", "/api-docs/")
STARTS = ["/", "/prompts/", "/runs/", "/judges/", "/pointwise/releases/", "/calibration/", "/pairwise/new/", "/jury/new/",
          "/ranker/", "/agent/", "/blind/", "/pointwise/", "/calibration/queue/",
          "/datasets/"]
MAX_PAGES = 160


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker):
    from django.contrib.auth.models import Group

    from fakejudge import DemoBrain, FakeJudgeServer
    from judgeapp.demo import demo_load
    from judgeapp.roles import Role

    with django_db_blocker.unblock(), FakeJudgeServer(DemoBrain(noise=0.08)) as server:
        for role in Role.values:
            Group.objects.get_or_create(name=role)
        # Committed (the demo's runs judge on threads), and flushed when the module ends.
        lines: list[str] = []
        demo_load(judge_url=server.url, log=lines.append)
        yield lines
        from django.core.management import call_command

        call_command("flush", interactive=False, verbosity=0)


def crawl(client: Client) -> dict[str, str]:
    """Each page the client's user reaches (URL → HTML), following links breadth first from STARTS."""
    seen: dict[str, str] = {}
    queue = list(STARTS)
    while queue and len(seen) < MAX_PAGES:
        url = queue.pop(0)
        if url in seen or url.startswith(SKIP):
            continue
        response = client.get(url)
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            seen[url] = ""
            continue
        page = response.content.decode()
        seen[url] = page
        for href in re.findall(r'href="([^"]+)"', page):
            href = urldefrag(html_lib.unescape(href))[0]
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or not href.startswith("/"):
                continue
            # One page of each paginated or filtered list is enough: the template is the same.
            if "page=" in (parts.query or "") and "page=2" not in parts.query:
                continue
            if href not in seen and href not in queue:
                queue.append(href)
    return {url: page for url, page in seen.items() if page}
