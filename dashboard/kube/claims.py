"""The claims there are, as a claims watch shows them: the (namespace, name) of every
PersistentVolumeClaim, which kube-scheduler's VolumeBinding PreFilter looks a pod's claims
up in (scheduling.diagnosis.missing_claim asks `(namespace, name) in claims`).

Names only: a claim's spec and status are never kept, so following them costs O(claims)
however large they are (the reflector's digest `claim_key` cuts each object down as it is
read). The owner keeps one, fed by its decoder's pages and events, and so does
kube-scheduler's stand-in, fed by its own reflector's lists and events.
"""


def claim_key(obj) -> tuple:
    """A claim as kept: (namespace, name). The claims reflector's digest."""
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


class ClaimNames:
    """A live container of the claims' keys. `known`: a complete list has been seen (before
    it, and once the API server forbids the claims, nothing can be said of a claim: a
    diagnosis must be given None, not this, to name claims unchecked). `denied`: the last
    word was a 403 (RBAC), until a list succeeds."""

    def __init__(self):
        self.names = set()
        self.known = False
        self.denied = False
        self._listing = None      # the keys of a paged list in progress

    def __contains__(self, key) -> bool:
        return key in self.names

    def __len__(self) -> int:
        return len(self.names)

    def page(self, keys, first: bool) -> None:
        """A page of a list in progress; `first` starts the list afresh."""
        if first or self._listing is None:
            self._listing = set()
        self._listing.update(keys)

    def listed(self, keys=()) -> set:
        """A list ended (its pages came before, or `keys` is all of it): it replaces what
        was kept. Returns the keys that came or went."""
        listing = self._listing if self._listing is not None else set()
        listing.update(keys)
        self._listing = None
        changed = listing ^ self.names
        self.names, self.known, self.denied = listing, True, False
        return changed

    def watched(self, etype: str, key) -> bool:
        """A watch event (ADDED, MODIFIED, DELETED); whether the set changed (a claim's
        changes other than its coming and going do not matter here)."""
        if etype == "DELETED":
            if key in self.names:
                self.names.discard(key)
                return True
            return False
        if key in self.names:
            return False
        self.names.add(key)
        return True

    def deny(self) -> None:
        """The API server forbids the claims: what was kept can no longer be followed."""
        self.names, self.known, self.denied, self._listing = set(), False, True, None

    def status(self) -> dict:
        return {"known": self.known, "count": len(self.names), "denied": self.denied}
