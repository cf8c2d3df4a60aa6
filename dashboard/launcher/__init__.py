"""What `manage.py up` (dashboard/management/commands/up.py) stages beyond its children: the
demo's scenes."""
