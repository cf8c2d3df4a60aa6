"""Talking to the Kubernetes API: the client from the settings, the reflector (list, then
watch), and the hot writes over http.client (Bindings, claims)."""
