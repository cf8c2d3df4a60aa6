from django.urls import path

from dashboard import views

urlpatterns = [
    path("", views.overview, name="overview"),
    path("nodes/", views.nodes, name="nodes"),
    path("zones/", views.zones, name="zones"),
    path("pods/", views.pods, name="pods"),
]
