"""A sample is drawn once per run, size and seed: the same draw again returns it (services/samples.py). Repeats
that a database already holds are kept, with their labels, numbered by `repeat` in the order they were drawn."""

from django.db import migrations, models


def number_the_repeats(apps, schema_editor):
    Sample = apps.get_model("calibration", "Sample")
    seen: dict[tuple, int] = {}
    drawn = Sample.objects.filter(method="drawn").order_by("created_at", "id").only("run_id", "size", "seed")
    for sample in drawn.iterator():
        key = (sample.run_id, sample.size, sample.seed)
        if key in seen:
            seen[key] += 1
            Sample.objects.filter(pk=sample.pk).update(repeat=seen[key])
        else:
            seen[key] = 0


class Migration(migrations.Migration):

    dependencies = [
        ("calibration", "0006_lock_scope"),
    ]

    operations = [
        migrations.AddField(
            model_name="sample",
            name="repeat",
            field=models.PositiveSmallIntegerField(
                default=0,
                help_text="0: the draw of its run, size and seed. A database from before a draw was made once (calibration "
                "0007) may hold repeats of one, numbered 1, 2, … in the order they were drawn.",
            ),
        ),
        migrations.RunPython(number_the_repeats, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="sample",
            constraint=models.UniqueConstraint(
                condition=models.Q(("method", "drawn")),
                fields=("run", "size", "seed", "repeat"),
                name="sample_drawn_once_per_run_size_seed",
            ),
        ),
    ]
