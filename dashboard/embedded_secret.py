"""The embedded default's SECRET_KEY: random, made on the first start, kept in a file under
var/ that only this machine's processes read. So no key is written in the source for anyone
to sign sessions with; outside the embedded default (DEBUG off) SECRET_KEY must be given.
"""
import os
from pathlib import Path
import secrets
import tempfile


def embedded_secret_key(path: Path) -> str:
    """The key in `path`, made there first if there is none. Several processes starting at
    once agree: the file appears whole or not at all (a hard link to a written temp file)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, written = tempfile.mkstemp(dir=path.parent, prefix=".secret-key-")
        try:
            with os.fdopen(descriptor, "w") as out:   # mkstemp makes it 0600
                out.write(secrets.token_urlsafe(50))
            os.link(written, path)
        except FileExistsError:
            pass                                       # another process made it first
        finally:
            os.unlink(written)
    return path.read_text().strip()
