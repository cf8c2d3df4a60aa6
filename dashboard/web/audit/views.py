"""The Audit page: every action people, tools and the owner took on pods and tokens, newest
first, filtered, paged back by cursor."""
from django.views.decorators.http import require_GET

from dashboard.web.audit import reads
from dashboard.web.pages import render_page

CHOICES = {"actions": reads.ACTIONS, "results": reads.RESULTS}


@require_GET
def audit(request):
    try:
        found = reads.AuditFilter.from_query(request.GET)
    except reads.BadAuditFilter as exc:
        return render_page(request, "dashboard/audit.html", "audit-list",
                           dict(CHOICES, error=str(exc), filter=reads.AuditFilter()), status=400)
    page = reads.audit_page(found)
    return render_page(request, "dashboard/audit.html", "audit-list", dict(
        CHOICES, page=page, filter=found, filtered=bool(found.query(before=None)),
        newest=found.query(before=None),
        older=found.query(before=page.next_before) if page.next_before else ""))
