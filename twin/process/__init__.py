"""Real programs in twin containers: what such a child process sees of the node (`view`)."""
