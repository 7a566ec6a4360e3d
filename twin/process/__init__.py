"""Real programs in twin containers: a pod's container run as a real local program (`runtime`), its
environment and command line built by the kubelet's rules (`podenv`), and what such a child process
sees of the node (`view`)."""
