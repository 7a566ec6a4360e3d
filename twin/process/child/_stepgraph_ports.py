"""Container ports in a twin process container: each pod has its own port space, as in its own
network namespace, while every program really listens on a free loopback port of the machine.

A program's `bind((addr, P))` binds `127.0.0.1:<a free port>` instead and records `P <real>` in
the pod's port table (`STEPGRAPH_PORTS_FILE`, shared by every process of the pod, exec'd ones
included); `connect((loopback or the pod's IP, P))` goes to the real port of `P`. So two twins,
or the machine's own services, never collide on 9100, nothing listens beyond loopback, and the
twin's pod proxy reaches the program through the same table. A second bind of a port that is
still listening in the pod fails with EADDRINUSE, as in one network namespace.
"""

import errno
import fcntl
import os
import socket

TABLE_ENV = "STEPGRAPH_PORTS_FILE"
POD_IP_ENV = "STEPGRAPH_POD_IP"
_LOCAL = {"127.0.0.1", "localhost", "0.0.0.0", "::", "::1", ""}


def read_table(path):
    """Container port → machine port (the last line for a port wins)."""
    table = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    table[int(parts[0])] = int(parts[1])
    except FileNotFoundError:
        pass
    return table


def _listening(port):
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0
    finally:
        probe.close()


def install():
    path = os.environ.get(TABLE_ENV)
    if not path:
        return
    local = set(_LOCAL) | {os.environ.get(POD_IP_ENV, "127.0.0.1")}
    original_bind, original_connect, original_connect_ex = socket.socket.bind, socket.socket.connect, \
        socket.socket.connect_ex

    def bind(self, address):
        if self.family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple) or not address[1]:
            return original_bind(self, address)
        wanted = int(address[1])
        with open(path, "a+", encoding="utf-8") as table_file:
            fcntl.flock(table_file, fcntl.LOCK_EX)  # one pod, one port space: binds are serialised
            taken = read_table(path).get(wanted)
            if taken is not None and self.type == socket.SOCK_STREAM and _listening(taken):
                raise OSError(errno.EADDRINUSE, os.strerror(errno.EADDRINUSE))
            host = "::1" if self.family == socket.AF_INET6 else "127.0.0.1"
            original_bind(self, (host, 0, *address[2:]))
            table_file.write(f"{wanted} {self.getsockname()[1]}\n")
            table_file.flush()

    def target(address):
        if isinstance(address, tuple) and len(address) >= 2 and str(address[0]) in local:
            real = read_table(path).get(int(address[1]))
            if real is not None:
                return ("127.0.0.1" if ":" not in str(address[0]) else "::1", real, *address[2:])
        return address

    def connect(self, address):
        return original_connect(self, target(address) if self.family in (socket.AF_INET, socket.AF_INET6) else address)

    def connect_ex(self, address):
        return original_connect_ex(self, target(address) if self.family in (socket.AF_INET, socket.AF_INET6) else address)

    socket.socket.bind, socket.socket.connect, socket.socket.connect_ex = bind, connect, connect_ex
