from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [("dashboard", "0006_bind_deadline_and_comparer_errors")]

    operations = [
        migrations.CreateModel(
            name="HealthSample",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("at", models.DateTimeField(db_index=True)),
                ("period", models.FloatField()),
                ("level", models.CharField(max_length=8)),
                ("problems", models.JSONField(default=dict)),
                ("pending", models.IntegerField(null=True)),
                ("assumed", models.IntegerField(null=True)),
                ("added", models.IntegerField(null=True)),
                ("assumes", models.IntegerField(default=0)),
                ("binds", models.IntegerField(default=0)),
                ("bind_failures", models.IntegerField(default=0)),
                ("expiries", models.IntegerField(default=0)),
                ("forgets", models.IntegerField(default=0)),
                ("feed_backlog", models.IntegerField(null=True)),
                ("read_model_backlog", models.IntegerField(null=True)),
                ("binds_stuck", models.IntegerField(null=True)),
            ],
        ),
    ]
