"""The twin's own certificate authority → the HTTPS listener programs in pods reach it on.

A program in a process container configures itself as in a pod: `load_incluster_config()` reads
`KUBERNETES_SERVICE_HOST/PORT` and the service-account `ca.crt`, and talks HTTPS to the API server
with that CA. `TwinCA` makes a fresh CA per twin (trustme: an ECDSA key in memory, nothing on the
machine's trust store) and a server certificate for every name a pod may use for the API server,
so hostname verification passes exactly as it does against a real cluster.
"""

from __future__ import annotations

import ssl
from functools import cached_property

# Every name and address a pod may reach the API server by (the Service's DNS names and loopback).
API_SERVER_NAMES = ("127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                    "kubernetes.default.svc.cluster.local")


class TwinCA:
    """A CA of this twin's own and the API server's certificate, made on first use."""

    @cached_property
    def _ca(self):  # imported here: twins that run no process container never pay for the crypto
        import trustme
        return trustme.CA(organization_name="stepgraph twin")

    @cached_property
    def ca_pem(self) -> str:
        """The CA certificate, PEM: the pod's `ca.crt`."""
        return self._ca.cert_pem.bytes().decode()

    def server_context(self) -> ssl.SSLContext:
        """The API server's TLS context: a certificate for `API_SERVER_NAMES`, signed by this CA."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ca.issue_cert(*API_SERVER_NAMES, common_name="kube-apiserver").configure_cert(context)
        return context
