from urllib.parse import quote, unquote

from django.contrib.auth import views as auth_views
from django.urls import path, register_converter

from dashboard.web.api import urls as api_urls
from dashboard.web.audit import views as audit_views
from dashboard.web.events import views as event_views
from dashboard.web.health import views as health_views
from dashboard.web.login_form import LoginForm
from dashboard.web.nodes import views as node_views
from dashboard.web.overview import views as overview_views
from dashboard.web.past import views as past_views
from dashboard.web.pending import views as pending_views
from dashboard.web.pods import views as pod_views
from dashboard.web.pools import views as pool_views
from dashboard.web.snapshot import views as snapshot_views
from dashboard.web.statuses import views as extender_pages
from dashboard.web.zones import views as zone_views


class AnySegment:
    """One path segment holding any text, "/" and "%" included: percent-encoded in the URL
    (plain names read as themselves), so a link to a pod's status never fails to be made
    whatever the namespace and name it was tracked under."""
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return unquote(value)

    def to_url(self, value: str) -> str:
        return quote(value, safe="")


register_converter(AnySegment, "segment")

handler400 = "dashboard.web.middleware.body_limit.bad_request"

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True,
                                                         authentication_form=LoginForm),
         name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", api_urls()),
    path("healthz", health_views.healthz, name="healthz"),
    path("readyz", health_views.readyz, name="readyz"),
    path("metrics", health_views.metrics, name="metrics"),
    path("health/banner/", health_views.banner, name="health-banner"),
    path("health/series/", health_views.series, name="health-series"),
    path("", overview_views.overview, name="overview"),
    path("nodes/", node_views.nodes, name="nodes"),
    path("nodes/<str:name>/", node_views.node_detail, name="node-detail"),
    path("heatmap/", node_views.heatmap_page, name="heatmap"),
    path("zones/", zone_views.zones, name="zones"),
    path("diff/", past_views.diff_page, name="diff"),
    path("snapshot/", snapshot_views.snapshot, name="snapshot"),
    path("events/", event_views.events, name="events"),
    path("audit/", audit_views.audit, name="audit"),
    path("pending/", pending_views.pending, name="pending"),
    path("pods/", pod_views.pods, name="pods"),
    path("pods/<str:uid>/", pod_views.pod_detail, name="pod-detail"),
    path("pods/<str:uid>/diagnosis/", pod_views.pod_diagnosis_section, name="pod-diagnosis"),
    path("pods/<str:uid>/<str:action>/", pod_views.pod_action, name="pod-action"),
    path("pools/", pool_views.pools_page, name="pools"),
    path("statuses/", extender_pages.statuses, name="statuses"),
    path("statuses/<segment:namespace>/<segment:name>/", extender_pages.status_detail,
         name="status-detail"),
]
