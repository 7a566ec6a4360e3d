# Compute PIDs per GPU, one `index=pid,pid` line each (empty after `=` for an idle GPU).
import pynvml

pynvml.nvmlInit()
try:
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        pids = sorted({p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)})
        print(f"{i}={','.join(str(p) for p in pids)}")
finally:
    pynvml.nvmlShutdown()
