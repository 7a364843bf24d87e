"""The calibration part of the demo: PandaLM's real labels and agreement, and a sample of the demo pointwise
run that two demo annotators can label to the end and so decide the demo judge's lock."""

from django.contrib.auth import get_user_model

from calibration.models import Sample
from calibration.selectors.policy import level_get
from calibration.services.agreement import agreement_compute
from calibration.services.pandalm import pandalm_ensure
from calibration.services.samples import sample_draw, sample_drawn
from judgeapp.models import Run, RunStatus

# Both get every item (overlap 2): their labels count toward the lock only when the people's own agreement
# is known, which needs items labelled by two.
DEMO_ANNOTATORS = ("annotator", "annotator2")
# Items are (case, criterion) pairs of the demo run (24 cases × 3 criteria); a lock needs `min_items`
# labelled ones (20 by default). Four more than that: an item the leakage scan holds back is not labelled,
# and 24 items take a person about two minutes with the keyboard.
DEMO_SAMPLE_SIZE = 24
DEMO_SEED = 7


def calibration_demo_size() -> int:
    """Items in the demo's sample: enough for the level in force to decide a lock."""
    return max(DEMO_SAMPLE_SIZE, level_get().min_items + 4)


def calibration_demo(*, lead=None, pointwise_run_id: str = "demo-pointwise") -> str:
    """Idempotent: imports PandaLM once and draws the demo sample once (per size)."""
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
    size = calibration_demo_size()
    if pointwise is not None and users and sample_drawn(run=pointwise, size=size, seed=DEMO_SEED) is None:
        drawn = sample_draw(
            run=pointwise, size=size, seed=DEMO_SEED, overlap=len(users), annotators=users, created_by=lead
        )
        lines.append(
            f"calibration sample {drawn.short_id} of {pointwise.run_id} ({drawn.size} items, each labelled by "
            f"{', '.join(u.username for u in users)})"
        )
    # One line: the demo loader prints each step's message on a line of its own.
    return ("demo: " + "; ".join(lines)) if lines else ""


def calibration_demo_next_steps() -> list[str]:
    """What `up` tells a new user to do to see the calibration loop: label the demo sample as both
    annotators, and watch the demo judge's standing change on the Calibration page and the gate."""
    sample = (
        Sample.objects.filter(run__run_id="demo-pointwise", method=Sample.Method.DRAWN, seed=DEMO_SEED)
        .order_by("-created_at", "-id")
        .first()
    )
    if sample is None:
        return []
    level = level_get()
    return [
        f"see the calibration loop: log in as {' and then as '.join(DEMO_ANNOTATORS)}, and score every item of "
        f"My queue with the keys 1–5 ({sample.size} items each, about two minutes)",
        f"then, as lead, open Calibration: labels given as you read the replies calibrate the demo judge "
        f"({level.get_metric_display()} at or above {level.threshold:.2f} on at least {level.min_items} items); "
        "both annotators scoring against the replies (5 for the worst, 1 for the best) lock it, and the gate of "
        "demo-pointwise-candidate says so",
    ]
