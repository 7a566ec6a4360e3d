# Power limit of every GPU in whole watts, one `index=W` line each (NVML reports milliwatts).
import pynvml

pynvml.nvmlInit()
try:
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        print(f"{i}={round(pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000)}")
finally:
    pynvml.nvmlShutdown()
