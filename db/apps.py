"""The tables' app, labelled "dashboard"."""
from django.apps import AppConfig


class TablesConfig(AppConfig):
    """Labelled with the name the tables were created under: the label names the tables
    (dashboard_podrecord), the migrations' history and the permission dashboard.act_on_pods,
    so a database made before the packages were split keeps working unchanged."""
    name = "db"
    label = "dashboard"
