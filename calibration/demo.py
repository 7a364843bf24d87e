"""The calibration part of the demo: PandaLM's real labels and agreement, and a small sample of the demo
pointwise run in the demo annotators' queues."""

from django.contrib.auth import get_user_model

from calibration.models import Sample
from calibration.services.agreement import agreement_compute
from calibration.services.pandalm import pandalm_ensure
from calibration.services.samples import sample_draw
from judgeapp.models import Run, RunStatus

DEMO_ANNOTATORS = ("annotator", "annotator2", "annotator3")
DEMO_SAMPLE_SIZE = 12
DEMO_SEED = 7


def calibration_demo(*, lead=None, pointwise_run_id: str = "demo-pointwise") -> str:
    """Idempotent: imports PandaLM once and draws the demo sample once."""
    lines = []
    run, sample, imported = pandalm_ensure()
    if sample is not None and sample.agreement_stale:
        agreement_compute(sample_pk=sample.pk)
    if imported:
        result = sample.results.filter(criterion="").first()
        figure = f", GPT-3.5 vs people: Cohen's kappa {result.kappa:.2f}" if result and result.kappa is not None else ""
        lines.append(f"PandaLM imported as run {run.run_id} (real GPT-3.5 verdicts and human labels{figure})")
    pointwise = Run.objects.filter(run_id=pointwise_run_id, status__in=[RunStatus.DONE, RunStatus.INVALID]).first()
    users = list(get_user_model().objects.filter(username__in=DEMO_ANNOTATORS).order_by("username"))
    if pointwise is not None and users and not Sample.objects.filter(run=pointwise, method=Sample.Method.DRAWN).exists():
        drawn = sample_draw(
            run=pointwise, size=DEMO_SAMPLE_SIZE, seed=DEMO_SEED, overlap=min(2, len(users)), annotators=users, created_by=lead
        )
        lines.append(
            f"calibration sample {drawn.short_id} of {pointwise.run_id} ({drawn.size} items, {drawn.overlap} annotators each) "
            f"queued for {', '.join(u.username for u in users)}"
        )
    # One line: the demo loader prints each step's message on a line of its own.
    return ("demo: " + "; ".join(lines)) if lines else ""
