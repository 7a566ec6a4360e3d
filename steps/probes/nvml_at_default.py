# Current and default power limit per GPU in whole watts: `index=limit,default`.
import pynvml

pynvml.nvmlInit()
try:
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        limit = pynvml.nvmlDeviceGetPowerManagementLimit(h)
        default = pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h)
        print(f"{i}={round(limit / 1000)},{round(default / 1000)}")
finally:
    pynvml.nvmlShutdown()
