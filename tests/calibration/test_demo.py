"""The demo's calibration step: PandaLM's real figures and a blind sample in the demo annotators' queues."""

import pytest

from calibration.models import AgreementResult, Assignment, Sample
from calibration.services.pandalm import RUN_ID
from judgeapp.demo import demo_load

# The demo's pointwise run judges on eight threads: each needs to see the committed data.
pytestmark = pytest.mark.django_db(transaction=True)


def test_demo_imports_pandalm_and_puts_a_sample_of_the_pointwise_demo_in_three_queues(fake_judge):
    from django.contrib.auth.models import Group

    for role in ("reviewer", "annotator", "lead"):  # a transactional test's flush empties the roles migration's groups
        Group.objects.get_or_create(name=role)
    lines = []
    demo_load(judge_url=fake_judge.url, log=lines.append)
    assert any("PandaLM imported as run pandalm-gpt-3.5-turbo" in line for line in lines)
    real = AgreementResult.objects.get(sample__run__run_id=RUN_ID, criterion="")
    assert real.judge_name == "gpt-3.5-turbo" and not real.scripted_demo and 0.4 < real.kappa < 0.55
    demo = Sample.objects.get(run__run_id="demo-pointwise")
    assert demo.size == 12 and demo.overlap == 2
    per_annotator = {u: Assignment.objects.filter(item__sample=demo, annotator__username=u).count() for u in ("annotator", "annotator2", "annotator3")}
    assert sum(per_annotator.values()) == 24 and all(n == 8 for n in per_annotator.values())
    # Loading the demo again adds nothing.
    demo_load(judge_url=fake_judge.url, log=lines.append)
    assert Sample.objects.count() == 2


def test_demo_prints_a_password_for_every_account_it_queues_items_for_and_each_logs_in(fake_judge):
    import re

    from django.contrib.auth.models import Group, User
    from django.test import Client

    from calibration.models import AssignmentState

    for role in ("reviewer", "annotator", "lead"):
        Group.objects.get_or_create(name=role)
    # An account that was there before the demo, with a password of its own: `up` cannot know it, so says nothing.
    User.objects.create_user(username="reviewer", password="chosen-by-the-reviewer")
    lines = []
    demo_load(judge_url=fake_judge.url, log=lines.append)
    (accounts_line,) = [line for line in lines if line.startswith("demo accounts: ")]
    printed = dict(re.findall(r"(\S+) / (\S+) \(\w+\)", accounts_line))
    assert set(printed) == {"lead", "annotator", "annotator2", "annotator3"}
    for username, password in printed.items():
        assert Client().login(username=username, password=password), username
    queued = set(
        Assignment.objects.filter(state=AssignmentState.PENDING).values_list("annotator__username", flat=True).distinct()
    )
    assert queued == {"annotator", "annotator2", "annotator3"} and queued <= set(printed)
    # PandaLM's annotators (imported labels, no password) are never printed.
    imported = set(Assignment.objects.filter(item__sample__run__run_id=RUN_ID).values_list("annotator__username", flat=True))
    assert imported and not imported & set(printed)
