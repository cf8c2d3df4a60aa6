from urllib.parse import quote, unquote

from django.contrib.auth import views as auth_views
from django.urls import path, register_converter

from dashboard import pod_views, views
from dashboard.login_form import LoginForm
from dashboard.api import urls as api_urls
from dashboard.extender import pages as extender_pages
from dashboard.extender import views as extender
from dashboard.pools import views as pool_views



class AnySegment:
    """One path segment holding any text, "/" and "%" included: percent-encoded in the URL
    (plain names read as themselves). The extender tracks pods by the names kube-scheduler
    sends, which nothing stops from holding a "/"."""
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return unquote(value)

    def to_url(self, value: str) -> str:
        return quote(value, safe="")


register_converter(AnySegment, "segment")

handler400 = "dashboard.body_limit.bad_request"

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True,
                                                         authentication_form=LoginForm),
         name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", api_urls()),
    path("", views.overview, name="overview"),
    path("nodes/", views.nodes, name="nodes"),
    path("nodes/<str:name>/", views.node_detail, name="node-detail"),
    path("zones/", views.zones, name="zones"),
    path("snapshot/", views.snapshot, name="snapshot"),
    path("events/", views.events, name="events"),
    path("pods/", pod_views.pods, name="pods"),
    path("pods/<str:uid>/", pod_views.pod_detail, name="pod-detail"),
    path("pods/<str:uid>/<str:action>/", pod_views.pod_action, name="pod-action"),
    path("pools/", pool_views.pools_page, name="pools"),
    path("statuses/", extender_pages.statuses, name="statuses"),
    path("statuses/<segment:namespace>/<segment:name>/", extender_pages.status_detail,
         name="status-detail"),
    path("extender/filter", extender.filter_nodes, name="extender-filter"),
    path("extender/bind", extender.bind, name="extender-bind"),
    path("extender/preempt", extender.preempt, name="extender-preempt"),
]
