"""Echoes back what each connection sends, on every TCP port named in argv; prints "listening"
once all of them accept connections, and ends on SIGTERM."""

import socket
import sys
import threading


def serve(server: socket.socket) -> None:
    while True:
        conn, _ = server.accept()
        threading.Thread(target=echo, args=(conn,), daemon=True).start()


def echo(conn: socket.socket) -> None:
    with conn:
        while data := conn.recv(65536):
            if data == b"bye\n":  # the program ends this connection itself
                return
            conn.sendall(data)


servers = []
for port in sys.argv[1:]:
    server = socket.socket()
    server.bind(("0.0.0.0", int(port)))
    server.listen()
    servers.append(server)
for server in servers:
    threading.Thread(target=serve, args=(server,), daemon=True).start()
print("listening", flush=True)
threading.Event().wait()
