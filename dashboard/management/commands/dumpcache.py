"""`manage.py dumpcache [--out FILE]`: the cache owner's whole dump as JSON lines, as
kube-scheduler's cache debugger writes it on SIGUSR2, read a page at a time (never the
whole cluster in one message): first a line with the first page's header ("dump": seq,
generation, counts, the comparer's verdict), then one line per node ("node") and one per
pending pod ("pending"), each with the `seq` of the page it came in, since pages are read
at different moments."""
import os
from argparse import ArgumentTypeError

import orjson
from django.core.management.base import BaseCommand, CommandError

from dashboard.clients import owner_client
from dashboard.wire.cache_dump import DEFAULT_LIMIT, MAX_LIMIT, NODES, PARTS
from dashboard.wire.commands import CommandError as OwnerRefused

HEADER = ("seq", "generation", "counts", "comparer")
TIMEOUT = 10.0    # seconds the owner has to answer a page


def _limit(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= MAX_LIMIT:
        raise ArgumentTypeError(f"must be a whole number from 1 to {MAX_LIMIT}")
    return int(value)


def dump_lines(limit: int):
    """The dump's lines (dicts), asking the owner for one page at a time."""
    for part in PARTS:
        after = ""
        while after is not None:
            page = owner_client.dump_cache(part, after, limit, timeout=TIMEOUT)
            if part == NODES and not after:
                yield {"kind": "dump", **{key: page[key] for key in HEADER}}
            kind = "node" if part == NODES else "pending"
            for item in page["items"]:
                yield {"kind": kind, "seq": page["seq"], **item}
            after = page["next"]


class Command(BaseCommand):
    help = ("Write the cache owner's dump (nodes with requested, allocatable, pods and "
            "nominated pods; the pending pods; the comparer's verdict) as JSON lines, read "
            "from the leading owner a page at a time.")

    def add_arguments(self, parser):
        parser.add_argument("--out", help="the file to write (whole or not at all); "
                                          "standard output by default")
        parser.add_argument("--limit", type=_limit, default=DEFAULT_LIMIT,
                            help=f"nodes or pending pods a page (1 to {MAX_LIMIT})")

    def handle(self, *args, out=None, limit=DEFAULT_LIMIT, **options):
        if out is None:
            self._write(lambda line: self.stdout.write(line), limit)
            return
        partial = f"{out}.partial"
        try:
            with open(partial, "w", encoding="utf-8") as sink:
                self._write(lambda line: sink.write(line + "\n"), limit)
            os.replace(partial, out)      # a reader never sees half a dump
        finally:
            if os.path.exists(partial):
                os.unlink(partial)

    def _write(self, write, limit):
        try:
            for line in dump_lines(limit):
                write(orjson.dumps(line).decode())
        except OwnerRefused as exc:
            raise CommandError(f"the cache owner could not dump the cache ({exc.status}): "
                               f"{exc.message}") from None
