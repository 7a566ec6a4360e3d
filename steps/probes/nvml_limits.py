# Default, minimum and maximum power limit per GPU in whole watts: `index=default,min,max`.
import pynvml

pynvml.nvmlInit()
try:
    for i in range(pynvml.nvmlDeviceGetCount()):
        h = pynvml.nvmlDeviceGetHandleByIndex(i)
        default = pynvml.nvmlDeviceGetPowerManagementDefaultLimit(h)
        low, high = pynvml.nvmlDeviceGetPowerManagementLimitConstraints(h)
        print(f"{i}={round(default / 1000)},{round(low / 1000)},{round(high / 1000)}")
finally:
    pynvml.nvmlShutdown()
