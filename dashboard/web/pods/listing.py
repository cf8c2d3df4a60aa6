"""What the pods list prints around its rows: the column headers' sort links, the state
tabs and the filter form's choices. The live list and the list at a moment
(dashboard/web/past/) print the same ones; their links keep every filter, `at` included.
"""
from dashboard.web.pods.query import PER_PAGE, SORT_CHOICES, STATES, PodFilters

# the list's columns: (key, header, the sort its header link asks for, None: not sortable)
COLUMNS = [("namespace", "Namespace", "name"), ("name", "Pod", None),
           ("state", "State", "state"), ("node", "Node", "node"), ("zone", "Zone", "zone"),
           ("cpu", "CPU", "cpu"), ("memory", "Memory", "memory"),
           ("priority", "Priority", "priority"), ("changed", "Changed", "changed")]


def column_links(filters: PodFilters, left_out=()) -> dict:
    """Query strings the column headers need: sort by each column (once more: reversed),
    from the first page; the columns `left_out` not shown."""
    columns = []
    for key, label, sort in COLUMNS:
        if key in left_out:
            continue
        if sort is None:
            columns.append((key, label, None, ""))
            continue
        order = "ascending" if filters.sort == sort else (
            "descending" if filters.sort == f"-{sort}" else "")
        flipped = f"-{sort}" if order == "ascending" else sort
        columns.append((key, label, filters.query(sort=flipped, page=None, cursor=None), order))
    return {"columns": columns}


def state_tabs(listing) -> list[tuple[str, str, str, int]]:
    """(label, state, query, count) of the tabs: every state under the other filters."""
    filters, counts = listing.filters, listing.counts
    return ([("All", "", filters.query(state="", page=None, cursor=None),
              sum(n for _, n in counts))]
            + [(state, state, filters.query(state=state, page=None, cursor=None), n)
               for state, n in counts])


def form_context(filters: PodFilters, namespaces: list[str], left_out=()) -> dict:
    """What the filter form prints: the choices, the sorts of the columns not `left_out`."""
    return {"filters": filters, "states": STATES, "namespaces": namespaces,
            "sorts": [sort for sort in SORT_CHOICES if sort.lstrip("-") not in left_out],
            "default_per_page": PER_PAGE}
