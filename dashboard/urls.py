from django.contrib.auth import views as auth_views
from django.urls import path

from dashboard import pod_views, views
from dashboard.api import urls as api_urls
from dashboard.extender import pages as extender_pages
from dashboard.extender import views as extender
from dashboard.pools import views as pool_views

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True),
         name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", api_urls()),
    path("", views.overview, name="overview"),
    path("nodes/", views.nodes, name="nodes"),
    path("nodes/<str:name>/", views.node_detail, name="node-detail"),
    path("heatmap/", views.heatmap_page, name="heatmap"),
    path("zones/", views.zones, name="zones"),
    path("snapshot/", views.snapshot, name="snapshot"),
    path("events/", views.events, name="events"),
    path("pods/", pod_views.pods, name="pods"),
    path("pods/<str:uid>/", pod_views.pod_detail, name="pod-detail"),
    path("pods/<str:uid>/<str:action>/", pod_views.pod_action, name="pod-action"),
    path("pools/", pool_views.pools_page, name="pools"),
    path("statuses/", extender_pages.statuses, name="statuses"),
    path("statuses/<str:namespace>/<str:name>/", extender_pages.status_detail,
         name="status-detail"),
    path("extender/filter", extender.filter_nodes, name="extender-filter"),
    path("extender/bind", extender.bind, name="extender-bind"),
    path("extender/preempt", extender.preempt, name="extender-preempt"),
]
