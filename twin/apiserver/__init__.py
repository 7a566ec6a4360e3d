"""The twin's Kubernetes API server: store, REST and watch, pod I/O, CRDs (see docs/design/twin-apiserver.md)."""
