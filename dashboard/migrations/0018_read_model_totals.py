"""PodStateCount and ZoneTotal, kept by triggers on the tables they sum (see the models).

A summary is a table of sums grouped by a key, of expressions of the source's rows.
PostgreSQL: one trigger a statement, over its transition tables (an upsert's inserted rows
reach the INSERT trigger, its updated ones the UPDATE trigger), so a batch of 20,000 rows
changes each summary row once or twice, not 20,000 times. SQLite has row triggers only.
A row leaving only lowers an existing sum, never creates one: after a summary was emptied
with its source (a flush, a TRUNCATE) nothing is left to lower.
"""
from typing import NamedTuple

from django.db import migrations, models


class Summary(NamedTuple):
    table: str
    source: str
    keys: dict      # column -> expression of the source row `{r}` (its columns prefixed)
    sums: dict      # column -> expression to sum, likewise
    sqlite: dict    # column -> SQLite's expression where PostgreSQL's is not SQLite's


def _json_int(column, key):
    return f"coalesce(({{r}}{column} ->> '{key}')::bigint, 0)"


def _sqlite_json_int(column, key):
    return f"coalesce(json_extract({{r}}{column}, '$.{key}'), 0)"


SUMMARIES = [
    Summary("dashboard_podstatecount", "dashboard_podrecord",
            keys={"state": "{r}state", "binding_finished": "{r}binding_finished"},
            sums={"n": "1"}, sqlite={}),
    Summary("dashboard_zonetotal", "dashboard_noderecord",
            keys={"zone": "{r}zone", "in_tree": "{r}tree_index >= 0"},
            sums={"nodes": "1", "missing": "CASE WHEN {r}has_node THEN 0 ELSE 1 END",
                  "cpu_requested": _json_int("requested", "milli_cpu"),
                  "cpu_allocatable": _json_int("allocatable", "milli_cpu"),
                  "memory_requested": _json_int("requested", "memory"),
                  "memory_allocatable": _json_int("allocatable", "memory")},
            sqlite={"cpu_requested": _sqlite_json_int("requested", "milli_cpu"),
                    "cpu_allocatable": _sqlite_json_int("allocatable", "milli_cpu"),
                    "memory_requested": _sqlite_json_int("requested", "memory"),
                    "memory_allocatable": _sqlite_json_int("allocatable", "memory")}),
]


def _expressions(summary, vendor) -> dict:
    return {**summary.keys, **summary.sums, **(summary.sqlite if vendor == "sqlite" else {})}


def _grouped(summary, rows, expressions) -> str:
    """SELECT keys, sums FROM rows GROUP BY keys (PostgreSQL's triggers: rows is a
    transition table; the seed: the source)."""
    keys = [expressions[c].format(r="") for c in summary.keys]
    sums = [f"sum({expressions[c].format(r='')}) AS {c}" for c in summary.sums]
    return (f"SELECT {', '.join(f'{e} AS {c}' for e, c in zip(keys, summary.keys))}, "
            f"{', '.join(sums)} FROM {rows} GROUP BY {', '.join(keys)}")


def _upsert(summary, select) -> str:
    t = summary.table
    return (f"INSERT INTO {t} ({', '.join([*summary.keys, *summary.sums])}) {select} "
            f"ON CONFLICT ({', '.join(summary.keys)}) DO UPDATE SET "
            + ", ".join(f"{c} = {t}.{c} + EXCLUDED.{c}" for c in summary.sums))


def _lower(summary, select) -> str:
    t = summary.table
    return (f"UPDATE {t} SET " + ", ".join(f"{c} = {t}.{c} - o.{c}" for c in summary.sums)
            + f" FROM ({select}) AS o WHERE "
            + " AND ".join(f"{t}.{c} = o.{c}" for c in summary.keys))


def postgresql(summary) -> list:
    t, source = summary.table, summary.source
    expressions = _expressions(summary, "postgresql")
    add = _upsert(summary, _grouped(summary, "new_rows", expressions))
    lower = _lower(summary, _grouped(summary, "old_rows", expressions))
    bodies = {"add": add, "lower": lower, "move": f"{lower}; {add}", "empty": f"DELETE FROM {t}"}
    statements = [f"CREATE FUNCTION {t}_{name}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                  f"BEGIN {body}; RETURN NULL; END $$" for name, body in bodies.items()]
    tables = {"add": "REFERENCING NEW TABLE AS new_rows",
              "lower": "REFERENCING OLD TABLE AS old_rows",
              "move": "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows", "empty": ""}
    events = {"add": "INSERT", "lower": "DELETE", "move": "UPDATE", "empty": "TRUNCATE"}
    statements += [f"CREATE TRIGGER {t}_{name} AFTER {events[name]} ON {source} "
                   f"{tables[name]} FOR EACH STATEMENT EXECUTE FUNCTION {t}_{name}()"
                   for name in bodies]
    return statements


def sqlite(summary) -> list:
    t, source = summary.table, summary.source
    expressions = _expressions(summary, "sqlite")

    def of(row, column):
        return expressions[column].format(r=f"{row}.")
    add = (f"INSERT INTO {t} ({', '.join([*summary.keys, *summary.sums])}) VALUES ("
           + ", ".join(of("NEW", c) for c in [*summary.keys, *summary.sums])
           + f") ON CONFLICT ({', '.join(summary.keys)}) DO UPDATE SET "
           + ", ".join(f"{c} = {c} + excluded.{c}" for c in summary.sums) + ";")
    lower = (f"UPDATE {t} SET " + ", ".join(f"{c} = {c} - ({of('OLD', c)})" for c in summary.sums)
             + " WHERE " + " AND ".join(f"{c} = {of('OLD', c)}" for c in summary.keys) + ";")
    return [f"CREATE TRIGGER {t}_add AFTER INSERT ON {source} BEGIN {add} END",
            f"CREATE TRIGGER {t}_lower AFTER DELETE ON {source} BEGIN {lower} END",
            f"CREATE TRIGGER {t}_move AFTER UPDATE ON {source} BEGIN {lower} {add} END"]


def seed(summary, vendor) -> str:
    """The summary of the rows already there."""
    grouped = _grouped(summary, summary.source, _expressions(summary, vendor))
    return f"INSERT INTO {summary.table} ({', '.join([*summary.keys, *summary.sums])}) {grouped}"


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor not in ("postgresql", "sqlite"):
        raise RuntimeError(f"the read model's summaries are kept by triggers written for "
                           f"PostgreSQL and SQLite, not {vendor}")
    with schema_editor.connection.cursor() as cursor:
        for summary in SUMMARIES:
            cursor.execute(seed(summary, vendor))
            for statement in (postgresql if vendor == "postgresql" else sqlite)(summary):
                cursor.execute(statement)


def uninstall(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        for summary in SUMMARIES:
            t = summary.table
            names = ("add", "lower", "move") + (("empty",) if vendor == "postgresql" else ())
            for name in names:
                if vendor == "postgresql":
                    cursor.execute(f"DROP TRIGGER {t}_{name} ON {summary.source}")
                    cursor.execute(f"DROP FUNCTION {t}_{name}()")
                else:
                    cursor.execute(f"DROP TRIGGER {t}_{name}")


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
        migrations.CreateModel(
            name='ZoneTotal',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('zone', models.CharField(blank=True, max_length=253)),
                ('in_tree', models.BooleanField(default=True)),
                ('nodes', models.BigIntegerField(default=0)),
                ('missing', models.BigIntegerField(default=0)),
                ('cpu_requested', models.BigIntegerField(default=0)),
                ('cpu_allocatable', models.BigIntegerField(default=0)),
                ('memory_requested', models.BigIntegerField(default=0)),
                ('memory_allocatable', models.BigIntegerField(default=0)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('zone', 'in_tree'), name='zone_total_key')],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]
