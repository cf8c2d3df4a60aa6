"""The nodes pages: the table, the heat map and one node."""
