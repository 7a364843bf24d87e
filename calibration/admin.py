from django.contrib import admin

from calibration import models


@admin.register(models.Sample)
class SampleAdmin(admin.ModelAdmin):
    list_display = [
        "short_id", "run", "label_kind", "method", "size", "overlap", "seed", "labels_version", "agreement_version", "created_at"
    ]
    list_filter = ["label_kind", "method"]
    readonly_fields = ["uuid", "labels_version", "agreement_version", "created_at", "updated_at"]


@admin.register(models.AgreementResult)
class AgreementResultAdmin(admin.ModelAdmin):
    ordering = ["-sample__created_at", "judge_name", "criterion"]
    list_display = [
        "judge_name", "short_judge_version", "criterion", "sample", "n_items", "n_unreadable", "kappa", "agreement", "updated_at"
    ]
    list_filter = ["label_kind", "judge_name"]
    readonly_fields = [f.name for f in models.AgreementResult._meta.fields]


@admin.register(models.JudgeLock)
class JudgeLockAdmin(admin.ModelAdmin):
    # Read-only: locks change through agreement results, the level and a lead's audited unlock, never by hand here.
    list_display = ["judge_name", "short_judge_version", "prompt_version", "rubric_version", "locked", "overridden", "changed_at"]
    readonly_fields = [f.name for f in models.JudgeLock._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(models.AgreementLevel)
class AgreementLevelAdmin(admin.ModelAdmin):
    list_display = ["metric", "threshold", "min_items", "set_by", "created_at"]
    readonly_fields = [f.name for f in models.AgreementLevel._meta.fields]

    def has_add_permission(self, request):
        return False  # set on the calibration page, where it is audited


@admin.register(models.Adjudication)
class AdjudicationAdmin(admin.ModelAdmin):
    # Read-only: a resolved label changes the sample's figures, so it is recorded on the adjudication page,
    # where its labels version is bumped and the decision audited.
    list_display = ["item", "value", "decided_by", "decided_at"]
    readonly_fields = [f.name for f in models.Adjudication._meta.fields]

    def has_add_permission(self, request):
        return False
