from django.urls import path

from dashboard import views
from dashboard.extender import views as extender

urlpatterns = [
    path("", views.overview, name="overview"),
    path("nodes/", views.nodes, name="nodes"),
    path("zones/", views.zones, name="zones"),
    path("pods/", views.pods, name="pods"),
    path("extender/filter", extender.filter_nodes, name="extender-filter"),
    path("extender/bind", extender.bind, name="extender-bind"),
    path("extender/preempt", extender.preempt, name="extender-preempt"),
]
