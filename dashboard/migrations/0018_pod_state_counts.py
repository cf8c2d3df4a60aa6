"""PodStateCount, kept by triggers on PodRecord's table (see the model).

PostgreSQL: one trigger a statement, over its transition tables (an upsert's inserted rows
reach the INSERT trigger, its updated ones the UPDATE trigger), so a batch of 20,000 rows
changes each count row once or twice, not 20,000 times. SQLite has row triggers only. A
row leaving a state only lowers an existing count (never creates one below zero): after
the counts were emptied with the rows (a flush, a TRUNCATE) nothing is left to lower.
"""
from django.db import migrations, models

COUNTS, PODS = "dashboard_podstatecount", "dashboard_podrecord"

SEED = f"""
    INSERT INTO {COUNTS} (state, binding_finished, n)
    SELECT state, binding_finished, count(*) FROM {PODS} GROUP BY state, binding_finished"""

POSTGRESQL = [f"""
    CREATE FUNCTION {COUNTS}_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {COUNTS} (state, binding_finished, n)
        SELECT state, binding_finished, count(*) FROM new_rows GROUP BY state, binding_finished
        ON CONFLICT (state, binding_finished) DO UPDATE SET n = {COUNTS}.n + EXCLUDED.n;
        RETURN NULL;
    END $$""", f"""
    CREATE FUNCTION {COUNTS}_remove() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE {COUNTS} AS c SET n = c.n - o.n
        FROM (SELECT state, binding_finished, count(*) AS n FROM old_rows
              GROUP BY state, binding_finished) AS o
        WHERE c.state = o.state AND c.binding_finished = o.binding_finished;
        RETURN NULL;
    END $$""", f"""
    CREATE FUNCTION {COUNTS}_move() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE {COUNTS} AS c SET n = c.n - o.n
        FROM (SELECT state, binding_finished, count(*) AS n FROM old_rows
              GROUP BY state, binding_finished) AS o
        WHERE c.state = o.state AND c.binding_finished = o.binding_finished;
        INSERT INTO {COUNTS} (state, binding_finished, n)
        SELECT state, binding_finished, count(*) FROM new_rows GROUP BY state, binding_finished
        ON CONFLICT (state, binding_finished) DO UPDATE SET n = {COUNTS}.n + EXCLUDED.n;
        RETURN NULL;
    END $$""", f"""
    CREATE FUNCTION {COUNTS}_empty() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM {COUNTS};
        RETURN NULL;
    END $$""",
    f"CREATE TRIGGER {COUNTS}_added AFTER INSERT ON {PODS} REFERENCING NEW TABLE AS new_rows "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {COUNTS}_add()",
    f"CREATE TRIGGER {COUNTS}_removed AFTER DELETE ON {PODS} REFERENCING OLD TABLE AS old_rows "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {COUNTS}_remove()",
    f"CREATE TRIGGER {COUNTS}_moved AFTER UPDATE ON {PODS} "
    f"REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {COUNTS}_move()",
    f"CREATE TRIGGER {COUNTS}_emptied AFTER TRUNCATE ON {PODS} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {COUNTS}_empty()",
]

_ADD_NEW = f"""INSERT INTO {COUNTS} (state, binding_finished, n)
        VALUES (NEW.state, NEW.binding_finished, 1)
        ON CONFLICT (state, binding_finished) DO UPDATE SET n = n + 1;"""
_REMOVE_OLD = f"""UPDATE {COUNTS} SET n = n - 1
        WHERE state = OLD.state AND binding_finished = OLD.binding_finished;"""
SQLITE = [
    f"CREATE TRIGGER {COUNTS}_added AFTER INSERT ON {PODS} BEGIN {_ADD_NEW} END",
    f"CREATE TRIGGER {COUNTS}_removed AFTER DELETE ON {PODS} BEGIN {_REMOVE_OLD} END",
    f"CREATE TRIGGER {COUNTS}_moved AFTER UPDATE OF state, binding_finished ON {PODS} "
    f"WHEN OLD.state IS NOT NEW.state OR OLD.binding_finished IS NOT NEW.binding_finished "
    f"BEGIN {_REMOVE_OLD} {_ADD_NEW} END",
]

DROP = {
    "postgresql": [f"DROP TRIGGER {COUNTS}_{t} ON {PODS}"
                   for t in ("added", "removed", "moved", "emptied")]
    + [f"DROP FUNCTION {COUNTS}_{f}()" for f in ("add", "remove", "move", "empty")],
    "sqlite": [f"DROP TRIGGER {COUNTS}_{t}" for t in ("added", "removed", "moved")],
}


def _run(schema_editor, statements):
    with schema_editor.connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in ("postgresql", "sqlite"):
        raise RuntimeError(f"PodStateCount's triggers are written for PostgreSQL and SQLite, "
                           f"not {vendor}")
    _run(schema_editor, [SEED, *(POSTGRESQL if vendor == "postgresql" else SQLITE)])


def uninstall(apps, schema_editor):
    _run(schema_editor, DROP[schema_editor.connection.vendor])


class Migration(migrations.Migration):

    dependencies = [
        ('dashboard', '0017_node_heat_order'),
    ]

    operations = [
        migrations.CreateModel(
            name='PodStateCount',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('state', models.CharField(choices=[('Pending', 'Pending (not in the cache, not bound)'), ('Assumed', 'Assumed'), ('Added', 'Added'), ('Expired', 'Expired (assumed, never confirmed)'), ('Forgotten', 'Forgotten (bind failed)')], max_length=16)),
                ('binding_finished', models.BooleanField(default=False)),
                ('n', models.BigIntegerField(default=0)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('state', 'binding_finished'), name='pod_state_count_key')],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]
