"""What several processes share: the Kubernetes client, reflector and Binding POST,
Redis URLs, clients and the embedded server, the supervisor and its children
as the overview shows them, the probe server, and how the web asks the owner and the
pools process."""
