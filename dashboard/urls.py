from django.contrib.auth import views as auth_views
from django.urls import path

from dashboard import views
from dashboard.api import urls as api_urls
from dashboard.extender import views as extender

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True),
         name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", api_urls()),
    path("", views.overview, name="overview"),
    path("nodes/", views.nodes, name="nodes"),
    path("zones/", views.zones, name="zones"),
    path("pods/", views.pods, name="pods"),
    path("extender/filter", extender.filter_nodes, name="extender-filter"),
    path("extender/bind", extender.bind, name="extender-bind"),
    path("extender/preempt", extender.preempt, name="extender-preempt"),
]
