"""Query-string values as the list pages (pods, nodes) and their sockets and APIs take
them: text filters, whole numbers, and the query string of a filter dataclass.

Why shared: every list must refuse the same bad input with the same words (a control
character, a value too long, a number out of range), whichever list it is.
"""
from dataclasses import fields
from urllib.parse import urlencode


def texts(params, names, max_len: int, error) -> dict:
    """The non-empty text values of `names` in `params` (a QueryDict or dict), stripped;
    raises `error` for a value that is not text, too long or holds control characters."""
    values = {}
    for name in names:
        value = params.get(name)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            raise error(f"{name}: expected text")
        value = value.strip()
        if len(value) > max_len:
            raise error(f"{name}: at most {max_len} characters")
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise error(f"{name}: control characters are not allowed")
        if value:
            values[name] = value
    return values


def whole_number(params, name: str, default: int, low: int, high: int, error) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise error(f"{name}: expected a whole number, got {str(raw)[:40]!r}") from None
    if not low <= value <= high:
        raise error(f"{name}: between {low} and {high}")
    return value


def query_string(filters, **changes) -> str:
    """The query string of a filter dataclass with `changes`, values equal to the class's
    defaults (or None) left out."""
    values = {f.name: getattr(filters, f.name) for f in fields(filters)}
    values.update(changes)
    defaults = type(filters)()
    return urlencode({name: value for name, value in values.items()
                      if value is not None and value != getattr(defaults, name)})
