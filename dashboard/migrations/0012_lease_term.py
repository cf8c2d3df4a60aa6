from django.db import migrations, models


def first_term(apps, schema_editor):
    """The one row every owner bumps and checks (no lease taken yet: term 0)."""
    apps.get_model("dashboard", "LeaseTerm").objects.create(pk=1, term=0)


class Migration(migrations.Migration):

    dependencies = [
        ('dashboard', '0011_transition_detail'),
    ]

    operations = [
        migrations.CreateModel(
            name='LeaseTerm',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name='ID')),
                ('term', models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunPython(first_term, migrations.RunPython.noop),
    ]
