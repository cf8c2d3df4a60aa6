"""What the pages read: the read model the owner writes in the database and the status it
publishes (read_model), and the one health model judging them (health)."""
