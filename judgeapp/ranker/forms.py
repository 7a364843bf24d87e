"""Forms of the ranker's pages. Cleaning reads the uploaded or chosen files as candidates, so a bad file
is a form error before anything is stored."""

from __future__ import annotations

from pathlib import Path

from django import forms
from django.conf import settings

from calibration.selectors.status import preflight_for_run
from judgeapp.judging.errors import InputError
from judgeapp.judging.forms import MultipleFileField, PreflightForm, budget_field, judges_callable
from judgeapp.models import Strategy
from judgeapp.ranker.core import DEFAULT_GOAL, DEFAULT_MAX_SIZE, rank_calls_most, tournament
from judgeapp.ranker.services import candidate_from_bytes, candidates_in_dir
from judgeapp.ranker.services.inputs import SET_NAME, Candidate, unique_ids_check

MAX_DIRECTORY_DEPTH = 2


def candidate_from_upload(upload) -> Candidate:
    if upload.size > settings.ARTIFACT_MAX_BYTES:
        raise forms.ValidationError(
            f"{upload.name}: {upload.size:,} bytes is over the limit of {settings.ARTIFACT_MAX_BYTES:,} (ARTIFACT_MAX_BYTES)"
        )
    try:
        return candidate_from_bytes(upload.read(), name=upload.name)
    except InputError as exc:
        raise forms.ValidationError(str(exc)) from None


def _subdirectories(directory: Path, root: Path) -> list[Path]:
    """The real subdirectories of `directory`: a symbolic link is never followed (it could lead out of the
    root), nor is anything that resolves outside it; an unreadable directory lists nothing."""
    try:
        entries = list(directory.iterdir())
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        try:
            if entry.is_dir() and entry.resolve().is_relative_to(root):
                found.append(entry)
        except OSError:
            continue
    return found


def readable_roots() -> list[Path]:
    """Where the server may read candidates: BROWSE_ROOTS, and the repo's sample sets (evals/ranker/)."""
    return [*settings.BROWSE_ROOTS, Path(settings.BASE_DIR) / "evals" / "ranker"]


def browsable_directories() -> list[tuple[str, str]]:
    """Directories under BROWSE_ROOTS and evals/ranker/ (two levels down) the server may read candidates from."""
    choices = []
    for root in readable_roots():
        root = Path(root).resolve()
        if not root.is_dir():
            continue
        found = [root]
        frontier = [root]
        for _depth in range(MAX_DIRECTORY_DEPTH):
            frontier = sorted(p for d in frontier for p in _subdirectories(d, root))
            found += frontier
        choices += [(str(d), f"{root.name}/{d.relative_to(root)}" if d != root else f"{root.name}/") for d in found]
    return choices


def judge_field() -> forms.ModelChoiceField:
    return forms.ModelChoiceField(
        queryset=judges_callable(),
        empty_label=None,
        help_text="The comparator's model. One comparator per ranklist: it is fixed for the ranklist's life.",
    )


class RankForm(PreflightForm):
    preflight_id = "rank-preflight"
    judge = judge_field()  # preselected as PreflightForm preselects every run form's judge
    goal = forms.CharField(
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="What “better” means in every comparison. A ranklist is bound to its goal.",
    )
    set_name = forms.CharField(
        label="Set name", max_length=100, help_text="Names the ranklist file: ranking_state/<set>.ranklist.json."
    )
    files = MultipleFileField(required=False, label="Upload candidate files", help_text="Each file's name is its artifact ID.")
    directory = forms.ChoiceField(
        required=False,
        label="…or a server directory",
        help_text="Only folders this server may read are offered. Files are taken in name order.",
    )
    max_size = forms.IntegerField(label="Max ranklist size", min_value=1, max_value=10_000, initial=DEFAULT_MAX_SIZE)
    both_orders = forms.BooleanField(
        required=False,
        label="Judge both orders",
        help_text="Every comparison twice, A/B then B/A; a disagreement counts as Equal. Cancels position bias; twice the calls.",
    )

    strategy = forms.ChoiceField(
        choices=Strategy.choices,
        initial=Strategy.SEED,
        required=False,
        help_text=(
            "binary insertion: the top, the bottom, then bisection. "
            "robust: survives a noisy or position-biased judge for a few more calls. "
            "tournament: a Bradley–Terry model choosing the pairs, within a call budget. Fixed for the ranklist's life."
        ),
    )
    budget = forms.IntegerField(
        required=False,
        min_value=1,
        label="Call budget (tournament)",
        help_text="The most comparator calls a tournament makes; empty: 10 per candidate.",
    )
    # The spend cap in dollars (CLI rank --budget-usd), beside the tournament's call budget above.
    spend_budget = budget_field()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["directory"].choices = [("", "—")] + browsable_directories()
        self.order_fields([
            "goal", "judge", "set_name", "files", "directory", "max_size", "strategy", "budget", "spend_budget", "both_orders",
            "confirm",
        ])

    def clean_strategy(self):
        return self.cleaned_data.get("strategy") or Strategy.SEED

    def clean_set_name(self):
        name = self.cleaned_data["set_name"].strip()
        if not SET_NAME.match(name):
            raise forms.ValidationError("Use letters, digits, '.', '_' and '-', starting with a letter or digit.")
        return name

    def clean(self):
        cleaned = super().clean()
        # What is known of the judge is said whatever else is wrong: the form shows it as the fields change.
        self.preflight(preflight_for_run(judges=[cleaned.get("judge")]))
        if "files" in self.errors or "directory" in self.errors:
            return cleaned  # the field's own error says what is wrong
        uploads, directory = cleaned.get("files") or [], cleaned.get("directory")
        if uploads and directory:
            raise forms.ValidationError("Upload files or choose a directory, not both.")
        if not uploads and not directory:
            raise forms.ValidationError("Upload the candidate files or choose a server directory.")
        try:
            if uploads:
                candidates = [candidate_from_upload(u) for u in uploads]
                unique_ids_check(candidates)
            else:
                candidates = candidates_in_dir(Path(directory), within=readable_roots())
        except InputError as exc:
            raise forms.ValidationError(str(exc)) from None
        cleaned["candidates"] = candidates
        self.calls_check(rank_calls_estimate(
            len(candidates), max_size=cleaned.get("max_size") or DEFAULT_MAX_SIZE, both_orders=bool(cleaned.get("both_orders")),
            strategy=cleaned.get("strategy") or Strategy.SEED, budget=cleaned.get("budget"),
        ))
        return cleaned


def rank_calls_estimate(candidates: int, *, max_size: int, both_orders: bool, strategy: str, budget: int | None) -> int:
    """About how many comparator calls a batch rank makes: a tournament its budget; binary insertion (and the
    robust strategy, which spends about as many) the most its inserts can make into a new ranklist."""
    if strategy == Strategy.TOURNAMENT:
        return budget or tournament.default_budget(candidates, max_size)
    return rank_calls_most(candidates, max_size=max_size, both_orders=both_orders)


class InsertForm(forms.Form):
    file = forms.FileField(
        label="New candidate", help_text="Its file name is its artifact ID; an ID already registered is skipped."
    )


    def clean_file(self):
        return candidate_from_upload(self.cleaned_data["file"])


class CompareForm(PreflightForm):
    preflight_id = "compare-preflight"

    judge = judge_field()
    goal = forms.CharField(max_length=2000, initial=DEFAULT_GOAL, widget=forms.Textarea(attrs={"rows": 2}))
    file_a = forms.FileField(label="Artifact A")
    file_b = forms.FileField(label="Artifact B")
    both_orders = forms.BooleanField(required=False, label="Judge both orders", help_text="A disagreement counts as Equal.")

    def __init__(self, *args, **kwargs):
        # The ranker's page shows this form beside RankForm, whose fields share names: ids must not repeat.
        kwargs.setdefault("auto_id", "compare_%s")
        super().__init__(*args, **kwargs)
        self.order_fields(["goal", "judge", "file_a", "file_b", "both_orders", "confirm"])

    def clean(self):
        cleaned = super().clean()
        self.preflight(preflight_for_run(judges=[cleaned.get("judge")]))
        return cleaned

    def clean_file_a(self):
        return candidate_from_upload(self.cleaned_data["file_a"])

    def clean_file_b(self):
        return candidate_from_upload(self.cleaned_data["file_b"])
