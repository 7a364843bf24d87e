"""The demo shows a pointwise report, a release record and a lead's gate decision, all said to come from
the scripted demo judge."""

from judgeapp.models import AuditLog, GateDecision, Release, Run


def test_the_demo_releases_v1_and_gates_the_candidate_against_it(transactional_db, fake_judge):
    from django.contrib.auth.models import Group, User

    from judgeapp.demo import DemoContext, demo_endpoints, demo_users
    from judgeapp.demo.steps import pointwise, pointwise_candidate
    from judgeapp.roles import Role

    for role in Role.values:  # a transactional test before this one flushed the groups the migration made
        Group.objects.get_or_create(name=role)  # (demo_users, unlike the tests' make_user, expects them)
    demo_users()
    judges, systems = demo_endpoints(fake_judge.url)
    context = DemoContext(
        judge_url=fake_judge.url, judge=judges[0], jurors=judges[1:], systems=systems, lead=User.objects.get(username="lead"),
    )
    assert "released as v1.0" in pointwise(context)
    pointwise_candidate(context)

    release = Release.objects.get()
    assert release.label == "v1.0" and release.run.run_id == "demo-pointwise" and release.system.name == "support-bot"
    candidate = Run.objects.get(run_id="demo-pointwise-candidate")
    assert candidate.outputs.filter(source="system").count() == 24
    gate = candidate.report["gate"]
    assert gate["baseline_run"] == "demo-pointwise" and gate["baseline_mean"] == release.mean
    decision = GateDecision.objects.get(run=candidate)
    # The candidate's replies score above v1.0's and the threshold: the gate opens and the lead approves.
    assert gate["passed"] is True and gate["reasons"] == []
    assert decision.verdict == "approved" and decision.decided_by.username == "lead"
    assert set(AuditLog.objects.values_list("action", flat=True)) == {"release.marked_released", f"release.{decision.verdict}"}
    assert candidate.uses_scripted_judge
    assert any("scripted demo server" in w for w in candidate.report["warnings"])
