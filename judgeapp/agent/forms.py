"""The form that starts an Agent-as-a-Judge run: task, checklist, workspace archive, trace and judge."""

from django import forms
from django.conf import settings

from calibration.selectors.status import preflight_for_run
from judgeapp.agent.core import parse_requirements, parse_task, parse_trace
from judgeapp.agent.core.loop import MAX_TOOL_CALLS
from judgeapp.judging.errors import InputError
from judgeapp.judging.forms import PreflightForm, budget_field, judges_callable


class AgentRunForm(PreflightForm):
    task = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}), help_text="What the agent was asked to do.")
    task_file = forms.FileField(required=False, help_text="…or a task file (text, Markdown, or a DevAI task JSON).")
    requirements = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={
            "rows": 6,
            "placeholder": "1. saves the plot to out/accuracy.png\n2. writes the metrics to out/metrics.json",
        }),
        help_text="A numbered checklist, one requirement a line, each specific enough to check.",
    )
    requirements_file = forms.FileField(
        required=False, help_text="…or a checklist file (numbered lines, JSON/JSONL, or a DevAI task JSON)."
    )
    workspace = forms.FileField(help_text="The agent's final workspace as an archive: .zip, .tar.gz, .tgz or .tar.")
    trace = forms.FileField(
        required=False, help_text="The agent's trace (optional): JSONL, one step a line, or a JSON array of steps."
    )
    judge = forms.ModelChoiceField(queryset=judges_callable(), empty_label=None)
    budget = budget_field()
    run_id = forms.CharField(required=False, max_length=100, help_text="Optional; default <utc>_<short-uuid>.")
    title = forms.CharField(required=False, max_length=300)

    def _text_or_file(self, text_field: str, file_field: str, what: str) -> tuple[bytes, str] | None:
        upload = self.cleaned_data.get(file_field)
        if upload is not None:
            return self._read(upload, file_field), upload.name
        text = (self.cleaned_data.get(text_field) or "").strip()
        if text:
            return text.encode("utf-8"), what
        self.add_error(text_field, f"Write the {what} or upload a file.")
        return None

    def _read(self, upload, field: str) -> bytes:
        if upload.size > settings.UPLOAD_MAX_BYTES:
            raise forms.ValidationError(
                {field: f"{upload.name} is {upload.size:,} bytes, over the limit of {settings.UPLOAD_MAX_BYTES:,}."}
            )
        return upload.read()

    def clean(self):
        cleaned = super().clean()
        task = self._text_or_file("task", "task_file", "task")
        requirements = self._text_or_file("requirements", "requirements_file", "requirements")
        try:
            if task is not None:
                cleaned["task_text"] = parse_task(*task)
        except InputError as exc:
            self.add_error("task_file" if cleaned.get("task_file") else "task", str(exc))
        try:
            if requirements is not None:
                cleaned["requirement_list"] = parse_requirements(*requirements)
        except InputError as exc:
            self.add_error("requirements_file" if cleaned.get("requirements_file") else "requirements", str(exc))
        trace_upload = cleaned.get("trace")
        cleaned["trace_parsed"] = None
        if trace_upload is not None:
            try:
                cleaned["trace_parsed"] = parse_trace(
                    self._read(trace_upload, "trace"), trace_upload.name, max_bytes=settings.AGENT_TRACE_MAX_BYTES
                )
            except InputError as exc:
                self.add_error("trace", str(exc))
        workspace = cleaned.get("workspace")
        if workspace is not None and workspace.size > settings.UPLOAD_MAX_BYTES:
            self.add_error(
                "workspace", f"{workspace.name} is {workspace.size:,} bytes, over the limit of {settings.UPLOAD_MAX_BYTES:,}."
            )

        self.preflight(preflight_for_run(judges=[cleaned.get("judge")]))
        # Each requirement is a conversation of at most MAX_TOOL_CALLS tool calls and a verdict: the most it asks.
        if cleaned.get("requirement_list"):
            self.calls_check(len(cleaned["requirement_list"]) * (MAX_TOOL_CALLS + 1))
        return cleaned
