# UUID per GPU, one `index=GPU-...` line each (bytes or str depending on the pynvml package).
import pynvml

pynvml.nvmlInit()
try:
    for i in range(pynvml.nvmlDeviceGetCount()):
        u = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(i))
        print(f"{i}={u.decode() if isinstance(u, bytes) else u}")
finally:
    pynvml.nvmlShutdown()
