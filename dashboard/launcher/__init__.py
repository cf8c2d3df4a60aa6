"""`manage.py up`: every process of the embedded default as a supervised child."""
