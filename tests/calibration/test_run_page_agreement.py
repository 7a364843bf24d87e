"""Issue 16, item 5: a run's page shows the judge's agreement once people's labels are imported, as its JSON
export does, not only the agreement frozen in its report when it finished."""

import html
import re

from django.urls import reverse

from tests.calibration.conftest import scores_for
from tests.calibration.test_lock import N, agreeing, with_tasks  # noqa: F401  (the fixture)


def test_the_run_page_shows_agreement_after_labels_are_imported(client, reviewer, planted_run, with_tasks):  # noqa: F811
    run = planted_run(scores_for(N))
    client.force_login(reviewer)
    before = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    assert "no human-scored sample yet" in before
    with_tasks(run, agreeing(scores_for(N)))
    run.refresh_from_db()
    assert not (run.report or {}).get("agreement")  # the report was written before the labels came
    after = client.get(reverse("run_detail", args=[run.run_id])).content.decode()
    cell = after.split('id="run-agreement">', 1)[1].split("</dd>", 1)[0]
    cell = html.unescape(re.sub(r"<[^>]+>", "", cell))  # "Cohen's kappa" links to the help page
    assert "Cohen's kappa 1.00" in cell and f"on {N} items" in cell and run.run_id in cell
