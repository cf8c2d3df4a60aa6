"""Kubernetes label selector strings: `app=web,tier!=db`, `env in (a,b)`, `!canary`, `gpu`.

Parsed once into requirements (memoised: the dashboard asks the same few
selectors again and again) and matched against a pod's labels.
"""
from functools import lru_cache
import re

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"(([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}")
_VALUE = re.compile(rf"({_NAME})?")
_TOKEN = re.compile(r"\s*(==|!=|=|\(|\)|,|!|>|<|[^\s=!(),<>]+)")


def _check_key(key):
    if len(key) > 317 or not _KEY.fullmatch(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise ValueError(f"invalid label key {key!r} in selector")
    return key


def _check_value(value):
    if not _VALUE.fullmatch(value):
        raise ValueError(f"invalid label value {value!r} in selector")
    return value


def _tokens(text):
    position, tokens = 0, []
    text = text.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:
            raise ValueError(f"cannot parse selector {text!r} at {position}")
        tokens.append(match.group(1))
        position = match.end()
    return tokens


def _value_set(tokens, index, text):
    if index >= len(tokens) or tokens[index] != "(":
        raise ValueError(f"expected '(' after set operator in selector {text!r}")
    values, index = [], index + 1
    while True:
        if index >= len(tokens):
            raise ValueError(f"unclosed value set in selector {text!r}")
        token = tokens[index]
        if token == ")" and not values:
            return frozenset(), index + 1
        if token in (",", ")"):
            values.append("")  # an empty value between separators
        else:
            values.append(_check_value(token))
            index += 1
            token = tokens[index] if index < len(tokens) else None
        if token == ")":
            return frozenset(values), index + 1
        if token != ",":
            raise ValueError(f"expected ',' or ')' in value set of selector {text!r}")
        index += 1


@lru_cache(maxsize=512)
def parse_selector(text: str) -> tuple:
    """Requirements (key, operator, values); ValueError for a malformed selector."""
    if not isinstance(text, str):
        raise ValueError(f"selector must be a string, not {type(text).__name__}")
    tokens = _tokens(text)
    requirements, index = [], 0
    while index < len(tokens):
        token = tokens[index]
        if token == "!":
            if index + 1 >= len(tokens):
                raise ValueError(f"'!' without a key in selector {text!r}")
            requirements.append((_check_key(tokens[index + 1]), "!", frozenset()))
            index += 2
        elif token in ("=", "==", "!=", "(", ")", ",", ">", "<"):
            raise ValueError(f"unexpected {token!r} in selector {text!r}")
        else:
            key = _check_key(token)
            index += 1
            operator = tokens[index] if index < len(tokens) else ","
            if operator == ",":
                requirements.append((key, "exists", frozenset()))
            elif operator in ("=", "==", "!="):
                value = tokens[index + 1] if index + 1 < len(tokens) else ""
                if value in (",", "(", ")", "=", "==", "!=", "!", ">", "<"):
                    value = ""
                else:
                    index += 1
                requirements.append((key, "!=" if operator == "!=" else "=",
                                     frozenset((_check_value(value),))))
                index += 1
            elif operator in ("in", "notin"):
                values, index = _value_set(tokens, index + 1, text)
                if operator == "in" and not values:
                    raise ValueError(f"'in' needs at least one value in selector {text!r}")
                requirements.append((key, operator, values))
            elif operator in (">", "<"):
                number = tokens[index + 1] if index + 1 < len(tokens) else ""
                if not re.fullmatch(r"-?[0-9]+", number):
                    raise ValueError(f"{operator!r} needs an integer in selector {text!r}")
                requirements.append((key, operator, frozenset((int(number),))))
                index += 2
            else:
                raise ValueError(f"unexpected {operator!r} after key {key!r} in selector {text!r}")
        if index < len(tokens):
            if tokens[index] != ",":
                raise ValueError(f"expected ',' at {tokens[index]!r} in selector {text!r}")
            index += 1
            if index >= len(tokens):
                raise ValueError(f"trailing ',' in selector {text!r}")
    return tuple(requirements)


def _matches_one(labels, key, operator, values):
    present = key in labels
    if operator == "=" or operator == "in":
        return present and labels[key] in values
    if operator == "!=" or operator == "notin":
        return not present or labels[key] not in values
    if operator == "exists":
        return present
    if operator == "!":
        return not present
    if not present:
        return False
    try:
        number = int(labels[key])
    except ValueError:
        return False
    (bound,) = values
    return number > bound if operator == ">" else number < bound


def matches(requirements, labels) -> bool:
    """Do `labels` (a dict or None) satisfy every requirement?"""
    labels = labels or {}
    return all(_matches_one(labels, *requirement) for requirement in requirements)
