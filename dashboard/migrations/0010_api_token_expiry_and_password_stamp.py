import hashlib

from django.db import migrations, models


def stamp_existing_tokens(apps, schema_editor):
    """Tokens made before stamps carry their user's password of now (models.password_stamp):
    they keep working until it changes."""
    ApiToken = apps.get_model("dashboard", "ApiToken")
    for token in ApiToken.objects.select_related("user"):
        token.password_stamp = hashlib.sha256(token.user.password.encode()).hexdigest()
        token.save(update_fields=["password_stamp"])


class Migration(migrations.Migration):

    dependencies = [
        ('dashboard', '0009_health_sample_feed_lag'),
    ]

    operations = [
        migrations.AddField(
            model_name='apitoken',
            name='expires',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='apitoken',
            name='password_stamp',
            field=models.CharField(default='', max_length=64),
            preserve_default=False,
        ),
        migrations.RunPython(stamp_existing_tokens, migrations.RunPython.noop),
    ]
