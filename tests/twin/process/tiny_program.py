"""A tiny program for process-container tests; what it does is chosen by its environment.

MODE=serve (default) runs until SIGTERM, then writes "bye" and exits 0; MODE=hang ignores SIGTERM;
MODE=slow takes $STOP_SECONDS to exit after SIGTERM; MODE=crash raises at start; MODE=exit exits
with $CODE; MODE=signal kills itself with SIGKILL; MODE=fork also starts a `sleep` child;
MODE=http also answers HTTP GET on $PORT (default 8080) with its host name and the path.
START_SECONDS=N spends N wall seconds in select() before "ready" (a start-up without waits or calls).
"""

import os
import select
import signal
import subprocess
import sys
import threading

print("argv " + " ".join(sys.argv[1:]), flush=True)
print(f"pid {os.getpid()}", flush=True)
for name in sorted(os.environ.get("SHOW", "").split(",")):
    if name:
        print(f"env {name}={os.environ.get(name, '<unset>')}", flush=True)
print("a line on stderr", file=sys.stderr, flush=True)
mode = os.environ.get("MODE", "serve")
if os.environ.get("START_SECONDS"):  # a start-up the hook does not see (as imports): no wait, no call
    select.select([], [], [], float(os.environ["START_SECONDS"]))
if mode == "crash":
    raise RuntimeError("boom at start")
if mode == "exit":
    sys.exit(int(os.environ.get("CODE", "0")))
if mode == "signal":
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "fork":
    child = subprocess.Popen(["sleep", "300"])
    print(f"child {child.pid}", flush=True)
if mode == "http":
    import http.server

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = f"{os.environ['HOSTNAME']} {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("0.0.0.0", int(os.environ.get("PORT", "8080"))), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
stop = threading.Event()
if mode == "hang":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
print("ready", flush=True)
stop.wait()
print("got SIGTERM", flush=True)
if mode == "slow":
    threading.Event().wait(float(os.environ.get("STOP_SECONDS", "1")))
print("bye", flush=True)
