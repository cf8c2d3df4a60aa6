from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('dashboard', '0013_health_sample_seq'),
    ]

    operations = [
        migrations.AddField(
            model_name='transition',
            name='replay',
            field=models.JSONField(blank=True, default=None, null=True),
        ),
        migrations.CreateModel(
            name='Checkpoint',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name='ID')),
                ('seq', models.BigIntegerField(unique=True)),
                ('at', models.DateTimeField(db_index=True)),
                ('pods', models.IntegerField()),
                ('nodes', models.IntegerField()),
                ('snapshot_generation', models.BigIntegerField(default=0)),
                ('state', models.BinaryField()),
            ],
            options={'ordering': ['seq']},
        ),
    ]
