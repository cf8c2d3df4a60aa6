"""The pods pages (the list, one pod) and the actions on a pod, the one door through which the
pages and the API change one."""
