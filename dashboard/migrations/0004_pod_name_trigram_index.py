"""A trigram index on pod names, on PostgreSQL: the pods search (`q`, a substring of the
name) otherwise reads all 150,000 rows to count its matches. SQLite has no such index;
there the search stays a scan."""
from django.db import migrations

INDEX = "pod_name_trigram"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        # pg_trgm is a trusted extension: the database's owner may create it.
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON dashboard_podrecord "
                              "USING gin (name gin_trgm_ops)")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0003_pod_changed_indexes")]
    operations = [migrations.RunPython(create, drop)]
