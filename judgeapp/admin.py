from django.contrib import admin

from judgeapp import models


@admin.register(models.Judge, models.System)
class EndpointAdmin(admin.ModelAdmin):
    list_display = [
        "name", "model", "effective_family", "guessed_family", "base_url", "api_key_env", "structured_output", "max_concurrency",
        "max_tokens", "source", "scripted_demo",
    ]
    list_filter = ["source", "structured_output", "scripted_demo"]
    search_fields = ["name", "model", "family"]
    readonly_fields = ["uuid", "created_at", "updated_at"]


class CaseInline(admin.TabularInline):
    model = models.Case
    extra = 0
    fields = ["case_id", "position", "input", "output"]


@admin.register(models.TestSet)
class TestSetAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "case_count", "git_commit", "created_at"]
    search_fields = ["name", "content_hash"]
    inlines = [CaseInline]
    readonly_fields = ["uuid", "content_hash", "created_at", "updated_at"]


class CriterionInline(admin.StackedInline):
    model = models.Criterion
    extra = 0


@admin.register(models.Rubric)
class RubricAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "git_commit", "created_at"]
    search_fields = ["name", "content_hash"]
    inlines = [CriterionInline]
    readonly_fields = ["uuid", "content_hash", "created_at", "updated_at"]


@admin.register(models.PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "git_commit", "created_at"]
    readonly_fields = ["content_hash", "created_at", "updated_at"]


@admin.register(models.Goal)
class GoalAdmin(admin.ModelAdmin):
    list_display = ["text", "created_at"]
    search_fields = ["text"]


@admin.register(models.ArtifactSet)
class ArtifactSetAdmin(admin.ModelAdmin):
    list_display = ["name", "run", "created_at"]


@admin.register(models.Artifact)
class ArtifactAdmin(admin.ModelAdmin):
    list_display = ["artifact_id", "artifact_set", "size", "content_hash", "created_at"]
    search_fields = ["artifact_id", "content_hash"]


@admin.register(models.Run)
class RunAdmin(admin.ModelAdmin):
    ordering = ["-created_at"]
    list_display = ["run_id", "kind", "status", "executor", "done_units", "failed_units", "total_units", "created_at"]
    list_filter = ["kind", "status", "executor"]
    search_fields = ["run_id", "title"]
    readonly_fields = ["created_at", "updated_at", "started_at", "finished_at"]


@admin.register(models.Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    ordering = ["run", "stage", "id"]
    list_display = ["key", "run", "purpose", "status", "attempts", "parse_attempts", "latency_ms", "cached", "truncated"]
    list_filter = ["status", "purpose", "cached", "truncated"]
    search_fields = ["key", "run__run_id"]
    raw_id_fields = ["run", "case", "criterion", "judge", "system", "prompt"]


@admin.register(models.Output)
class OutputAdmin(admin.ModelAdmin):
    list_display = ["run", "case", "slot", "source", "system"]
    raw_id_fields = ["run", "case", "system"]


@admin.register(models.CachedResponse)
class CachedResponseAdmin(admin.ModelAdmin):
    list_display = ["key", "hits", "created_at"]


@admin.register(models.JudgeSlot)
class JudgeSlotAdmin(admin.ModelAdmin):
    list_display = ["judge_name", "slot", "holder", "leased_until"]


@admin.register(models.AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    """Append-only: readable here, never editable or deletable."""

    list_display = ["created_at", "actor_label", "action", "subject", "run", "reason"]
    list_filter = ["action"]
    search_fields = ["subject", "reason", "actor_label"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.Ranklist)
class RanklistAdmin(admin.ModelAdmin):
    list_display = ["__str__", "goal", "judge", "max_size", "both_orders", "version", "created_at"]
    readonly_fields = [
        "uuid", "run", "artifact_set", "goal", "prompt", "judge", "judge_version", "version", "created_at", "updated_at"
    ]


@admin.register(models.Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ["run", "artifact_a", "artifact_b", "stage", "winner", "created_at"]
    list_filter = ["stage", "winner"]
    readonly_fields = [f.name for f in models.Comparison._meta.fields]
@admin.register(models.Release)
class ReleaseAdmin(admin.ModelAdmin):
    """Made by leads on a run's gate page (with an audit entry); read here, not edited."""

    list_display = ["system", "label", "run", "mean", "released_by", "created_at"]
    list_filter = ["system"]
    readonly_fields = [f.name for f in models.Release._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(models.GateDecision)
class GateDecisionAdmin(admin.ModelAdmin):
    """Append-only, like the audit log."""

    list_display = ["run", "verdict", "actor_label", "reason", "created_at"]
    list_filter = ["verdict"]
    search_fields = ["run__run_id", "reason", "actor_label"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
