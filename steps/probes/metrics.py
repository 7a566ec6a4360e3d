# The Power Agent's Prometheus page, scraped from inside its own pod (the image has no curl).
import sys
import urllib.request

with urllib.request.urlopen("http://127.0.0.1:9100/metrics", timeout=5) as r:
    sys.stdout.write(r.read().decode())
