"""Where a process's memory goes, by the line that allocated it: a `manage.py` command
(the owner's `watch`, the `standin`) run in this process under tracemalloc; each SIGUSR1
writes the largest lines and files to `--out`.

    SCHEDVIEW_KUBECONFIG=... DATABASE_URL=... REDIS_URL=... \\
        .venv/bin/python bench/memory_trace.py --out /tmp/owner.txt watch --id traced
    kill -USR1 <its pid>      # once it has synced, as often as wanted

Tracing costs memory of its own (about 50 bytes a live block), so the RSS of this process
is not the command's: compare the traced sizes. A child the command forks (the owner's
decoder, from a server of its own) is not traced. Figures are printed, nothing asserted.
"""
import argparse
import os
import signal
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")


def write_top(out: Path, lines: int):
    snapshot = tracemalloc.take_snapshot()
    with out.open("w") as file:
        by_line = snapshot.statistics("lineno")
        file.write(f"traced {sum(s.size for s in by_line):,} bytes\n")
        for title, stats in (("by line", by_line[:lines]),
                             ("by file", snapshot.statistics("filename")[:lines // 2])):
            file.write(f"\n{title}: bytes, blocks, where\n")
            for stat in stats:
                file.write(f"{stat.size:>14,} {stat.count:>10,}  {stat.traceback[0]}\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="written on each SIGUSR1")
    parser.add_argument("--lines", type=int, default=60)
    parser.add_argument("command", nargs=argparse.REMAINDER, help="manage.py's arguments")
    args = parser.parse_args()
    tracemalloc.start()
    import django
    django.setup()
    from django.core.management import call_command
    signal.signal(signal.SIGUSR1, lambda *_: write_top(args.out, args.lines))
    call_command(*args.command)


if __name__ == "__main__":
    main()
