"""The embedded twin of a GPU test node; it imports nothing of stepgraph."""
