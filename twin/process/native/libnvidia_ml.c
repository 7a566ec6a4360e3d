/*
 * libnvidia-ml.so.1 for twin containers: the NVML entry points a Power Agent and the probes call,
 * each forwarded over a Unix socket to the twin, which answers from its GPU model for this
 * container's visible GPUs.  The real nvidia-ml-py loads this file with CDLL("libnvidia-ml.so.1")
 * through LD_LIBRARY_PATH, exactly as it loads the driver's library, so every type check, return
 * code and NVMLError_* class the caller meets is the binding's own.
 *
 * Wire format (over the bridge of twin_bridge.h):
 *   request  "nvml <function> <args...>"  reply "<nvmlReturn_t> <values...>"
 * Device handles are pointers into a table of this library; the twin sees only their index.
 */
#define _GNU_SOURCE
#include <stdarg.h>

#include "twin_bridge.h"

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_UNKNOWN 999

#define MAX_DEVICES 64
#define MAX_PROCS 1024

struct nvmlDevice_st {
    unsigned int index;
};
typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

static struct nvmlDevice_st devices[MAX_DEVICES];

__attribute__((constructor)) static void init_table(void) {
    for (unsigned int i = 0; i < MAX_DEVICES; i++)
        devices[i].index = i;
}

/*
 * Send one NVML request; on success `reply` holds "<code>\t<values>" and the code is returned.
 * Without a twin to talk to, a real machine's answer: the driver is not loaded.
 */
static nvmlReturn_t call(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static nvmlReturn_t call(const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof(line) - 1)
        return NVML_ERROR_INVALID_ARGUMENT;
    line[n] = '\n';
    line[n + 1] = '\0';
    int gone;
    if (bridge_request(line, &gone) != 0)
        return gone == 1 ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_ERROR_UNKNOWN;
    return (nvmlReturn_t)strtol(reply, NULL, 10);
}

/* The n-th TAB-separated value of the reply (0 = first value after the code), or NULL. */
static const char *value(int n) {
    const char *p = strchr(reply, '\t');
    while (p && n-- > 0)
        p = strchr(p + 1, '\t');
    return p ? p + 1 : NULL;
}

static unsigned long long uvalue(int n) {
    const char *v = value(n);
    return v ? strtoull(v, NULL, 10) : 0;
}

static nvmlReturn_t copy_string(int n, char *out, unsigned int length) {
    const char *v = value(n);
    size_t len = 0;
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (v)
        len = strcspn(v, "\t");
    if (len + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, v ? v : "", len);
    out[len] = '\0';
    return NVML_SUCCESS;
}

static int handle_index(nvmlDevice_t device, unsigned int *index) {
    if (device < &devices[0] || device >= &devices[MAX_DEVICES])
        return -1;
    *index = device->index;
    return 0;
}

#define LOCKED(body)                                                                               \
    do {                                                                                           \
        pthread_mutex_lock(&bridge_lock);                                                                 \
        nvmlReturn_t rc_ = (body);                                                                 \
        pthread_mutex_unlock(&bridge_lock);                                                               \
        return rc_;                                                                                \
    } while (0)

/* ---- initialisation -------------------------------------------------------------------------- */

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { LOCKED(call("nvml\tnvmlInitWithFlags\t%u", flags)); }
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlShutdown(void) { LOCKED(call("nvml\tnvmlShutdown")); }

/* The driver's own wording for each code (nvmlErrorString never fails). */
const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case 0: return "Success";
    case 1: return "Uninitialized";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 5: return "Already Initialized";
    case 6: return "Not Found";
    case 7: return "Insufficient Size";
    case 8: return "Insufficient External Power";
    case 9: return "Driver Not Loaded";
    case 10: return "Timeout";
    case 11: return "Interrupt request issue";
    case 12: return "NVML Shared Library Not Found";
    case 13: return "Function Not Found";
    case 14: return "Corrupted infoROM";
    case 15: return "GPU is lost";
    case 16: return "GPU requires restart";
    case 17: return "The operating system has blocked the request.";
    case 18: return "RM has detected an NVML/RM version mismatch.";
    case 19: return "In use by another client";
    case 20: return "Insufficient Memory";
    case 21: return "No data";
    default: return "Unknown Error";
    }
}

/* ---- system ---------------------------------------------------------------------------------- */

static nvmlReturn_t string_call(const char *function, char *out, unsigned int length) {
    nvmlReturn_t rc = call("nvml\t%s", function);
    return rc == NVML_SUCCESS ? copy_string(0, out, length) : rc;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    LOCKED(string_call("nvmlSystemGetDriverVersion", version, length));
}

static nvmlReturn_t uint_call_plain(const char *function, unsigned int *out) {
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t rc = call("nvml\t%s", function);
    if (rc == NVML_SUCCESS)
        *out = (unsigned int)uvalue(0);
    return rc;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version) {
    LOCKED(uint_call_plain("nvmlSystemGetCudaDriverVersion", (unsigned int *)version));
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version) { return nvmlSystemGetCudaDriverVersion(version); }

/* ---- enumeration ----------------------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) { LOCKED(uint_call_plain("nvmlDeviceGetCount", count)); }
nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

static nvmlReturn_t handle_reply(nvmlReturn_t rc, nvmlDevice_t *device) {
    if (rc != NVML_SUCCESS)
        return rc;
    unsigned long long index = uvalue(0);
    if (index >= MAX_DEVICES)
        return NVML_ERROR_UNKNOWN;
    *device = &devices[index];
    return NVML_SUCCESS;
}

static nvmlReturn_t by_index(unsigned int index, nvmlDevice_t *device) {
    if (!device)
        return NVML_ERROR_INVALID_ARGUMENT;
    return handle_reply(call("nvml\tnvmlDeviceGetHandleByIndex\t%u", index), device);
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) { LOCKED(by_index(index, device)); }
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

static nvmlReturn_t by_uuid(const char *uuid, nvmlDevice_t *device) {
    if (!uuid || !device || strpbrk(uuid, "\t\n"))
        return NVML_ERROR_INVALID_ARGUMENT;
    return handle_reply(call("nvml\tnvmlDeviceGetHandleByUUID\t%s", uuid), device);
}
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) { LOCKED(by_uuid(uuid, device)); }

/* ---- per-device reads and writes ------------------------------------------------------------- */

static nvmlReturn_t device_uints(const char *function, nvmlDevice_t device, unsigned int *a, unsigned int *b) {
    unsigned int index;
    if (handle_index(device, &index) != 0 || !a)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t rc = call("nvml\t%s\t%u", function, index);
    if (rc == NVML_SUCCESS) {
        *a = (unsigned int)uvalue(0);
        if (b)
            *b = (unsigned int)uvalue(1);
    }
    return rc;
}

static nvmlReturn_t device_string(const char *function, nvmlDevice_t device, char *out, unsigned int length) {
    unsigned int index;
    if (handle_index(device, &index) != 0 || !out)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t rc = call("nvml\t%s\t%u", function, index);
    return rc == NVML_SUCCESS ? copy_string(0, out, length) : rc;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index) {
    LOCKED(device_uints("nvmlDeviceGetIndex", device, index, NULL));
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    LOCKED(device_string("nvmlDeviceGetUUID", device, uuid, length));
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    LOCKED(device_string("nvmlDeviceGetName", device, name, length));
}
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit) {
    LOCKED(device_uints("nvmlDeviceGetPowerManagementLimit", device, limit, NULL));
}
nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device, unsigned int *limit) {
    LOCKED(device_uints("nvmlDeviceGetPowerManagementDefaultLimit", device, limit, NULL));
}
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit) {
    LOCKED(device_uints("nvmlDeviceGetEnforcedPowerLimit", device, limit, NULL));
}
nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device, unsigned int *minLimit,
                                                         unsigned int *maxLimit) {
    if (!maxLimit)
        return NVML_ERROR_INVALID_ARGUMENT;
    LOCKED(device_uints("nvmlDeviceGetPowerManagementLimitConstraints", device, minLimit, maxLimit));
}

static nvmlReturn_t set_limit(nvmlDevice_t device, unsigned int limit) {
    unsigned int index;
    if (handle_index(device, &index) != 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    return call("nvml\tnvmlDeviceSetPowerManagementLimit\t%u\t%u", index, limit);
}
nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit) { LOCKED(set_limit(device, limit)); }

/*
 * Compute processes, in the driver's two-call protocol: with too small an array (or none) the
 * call reports the count it needs and NVML_ERROR_INSUFFICIENT_SIZE; an idle GPU is NVML_SUCCESS
 * with a count of 0.  The reply lists "pid,usedGpuMemory,gpuInstanceId,computeInstanceId".
 */
static nvmlReturn_t processes(nvmlDevice_t device, unsigned int *count, void *infos, int version) {
    unsigned int index, n = 0;
    if (handle_index(device, &index) != 0 || !count)
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t rc = call("nvml\tnvmlDeviceGetComputeRunningProcesses\t%u", index);
    if (rc != NVML_SUCCESS)
        return rc;
    n = (unsigned int)uvalue(0);
    if (n > MAX_PROCS)
        return NVML_ERROR_UNKNOWN;
    if (*count < n || (n > 0 && !infos)) {
        *count = n;
        return n == 0 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned int i = 0; i < n; i++) {
        const char *v = value((int)i + 1);
        unsigned int pid = 0, gi = 0, ci = 0;
        unsigned long long mem = 0;
        if (!v || sscanf(v, "%u,%llu,%u,%u", &pid, &mem, &gi, &ci) != 4)
            return NVML_ERROR_UNKNOWN;
        if (version == 1) {
            nvmlProcessInfo_v1_t *p = (nvmlProcessInfo_v1_t *)infos + i;
            p->pid = pid;
            p->usedGpuMemory = mem;
        } else {
            nvmlProcessInfo_v2_t *p = (nvmlProcessInfo_v2_t *)infos + i;
            p->pid = pid;
            p->usedGpuMemory = mem;
            p->gpuInstanceId = gi;
            p->computeInstanceId = ci;
        }
    }
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
    LOCKED(processes(device, count, infos, 3));
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_v2_t *infos) {
    LOCKED(processes(device, count, infos, 2));
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_v1_t *infos) {
    LOCKED(processes(device, count, infos, 1));
}
