"""A lock is scoped: one per judge configuration × prompt version × rubric version. A result counts the
labelled items whose judge reply was unusable (`n_unreadable`)."""

from django.db import migrations, models


def scope_from_result(apps, schema_editor):
    """An existing lock was decided by one result: it keeps that result's prompt and rubric versions (empty
    when it has none). The configuration's other scopes are decided at their next evaluation."""
    JudgeLock = apps.get_model("calibration", "JudgeLock")
    for lock in JudgeLock.objects.filter(result__isnull=False).select_related("result"):
        JudgeLock.objects.filter(pk=lock.pk).update(
            prompt_version=lock.result.prompt_version or "", rubric_version=lock.result.rubric_version or ""
        )


class Migration(migrations.Migration):

    dependencies = [
        ("calibration", "0005_checkup_floors"),
    ]

    operations = [
        migrations.AddField(
            model_name="agreementresult",
            name="n_unreadable",
            field=models.PositiveIntegerField(default=0, help_text="Labelled items of n_items whose judge reply gave no usable verdict."),
        ),
        migrations.AlterField(
            model_name="agreementresult",
            name="n_items",
            field=models.PositiveIntegerField(
                help_text="Labelled items compared: those with a judge verdict and those whose judge reply was unusable."
            ),
        ),
        migrations.AddField(
            model_name="judgelock",
            name="prompt_version",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.AddField(
            model_name="judgelock",
            name="rubric_version",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
        migrations.RunPython(scope_from_result, migrations.RunPython.noop),
        migrations.RemoveConstraint(
            model_name="judgelock",
            name="judgelock_unique_per_config",
        ),
        migrations.AddConstraint(
            model_name="judgelock",
            constraint=models.UniqueConstraint(
                fields=("judge_name", "judge_version", "prompt_version", "rubric_version"), name="judgelock_unique_per_scope"
            ),
        ),
        migrations.RemoveIndex(
            model_name="judgelock",
            name="judgelock_by_name_latest",
        ),
        migrations.AddIndex(
            model_name="judgelock",
            index=models.Index(fields=["judge_name", "prompt_version", "rubric_version", "-changed_at"], name="judgelock_by_scope_latest"),
        ),
    ]
