"""The app, labelled "dashboard": the label names the tables (dashboard_podrecord), the
migrations' history and the permission dashboard.act_on_pods."""
from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    label = "dashboard"
