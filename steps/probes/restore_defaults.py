# Verified teardown: set every GPU to its default limit, read it back, and say so per GPU.
# Prints `index=was,now,default,ok|FAILED` and exits 1 if any GPU is not at its default afterwards.
import sys

import pynvml

failed = 0
pynvml.nvmlInit()
try:
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        default = pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h)
        was = pynvml.nvmlDeviceGetPowerManagementLimit(h)
        try:
            pynvml.nvmlDeviceSetPowerManagementLimit(h, default)
        except pynvml.NVMLError as e:
            print(f"# gpu {i}: set failed: {e}", file=sys.stderr)
        now = pynvml.nvmlDeviceGetPowerManagementLimit(h)
        ok = now == default
        failed += not ok
        print(f"{i}={was // 1000},{now // 1000},{default // 1000},{'ok' if ok else 'FAILED'}")
finally:
    pynvml.nvmlShutdown()
sys.exit(1 if failed else 0)
