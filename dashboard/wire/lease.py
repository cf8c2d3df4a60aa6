"""The leader lease's token, which the leading owner writes and the overview reads:
"<owner id>:<random hex>", so a restarted owner with the same id knows its dead self."""
import uuid


def lease_token(holder: str) -> str:
    return f"{holder}:{uuid.uuid4().hex}"


def holder_name(token: str | None) -> str:
    """The owner's id from a lease token ("" for none)."""
    return token.rpartition(":")[0] if token else ""


def lease_holder(client, key: str) -> str | None:
    """The token in the lease `key`, None when nobody holds it. Raises redis's errors."""
    value = client.get(key)
    return value.decode() if value else None
