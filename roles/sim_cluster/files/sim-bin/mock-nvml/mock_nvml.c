/*
 * A mock NVML library of gpulab.kai_hami: libnvidia-ml.so.1 with one device, for the sim
 * platform's "mock_nvml" boundary mode. It is not NVIDIA's library and drives no GPU.
 *
 * KAI's reservation app (through NVIDIA's go-nvml v0.13.0-1) dlopen()s libnvidia-ml.so.1 with
 * RTLD_LAZY|RTLD_GLOBAL and calls nvmlInit_v2, nvmlDeviceGetCount_v2 (it needs exactly one
 * device), nvmlDeviceGetHandleByIndex_v2(0), nvmlDeviceGetUUID, nvmlShutdown and, on errors,
 * nvmlErrorString. go-nvml also probes 22 versioned names with dlsym() when it loads; the ones
 * this library does not implement answer NVML_ERROR_NOT_SUPPORTED.
 *
 * Configured per process by environment (read by nvmlInit):
 *   MOCK_NVML_UUID            the device's UUID (default GPU-12345678-1234-1234-1234-123456780000)
 *   MOCK_NVML_NAME            its name (default "NVIDIA A100-SXM4-40GB")
 *   MOCK_NVML_MEMORY_MIB      its memory in MiB (default 40960)
 *   MOCK_NVML_DRIVER_VERSION  the driver version (default 550.163.01)
 *
 * Build: gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 mock_nvml.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_UNKNOWN = 999,
};

struct nvmlDevice_st { int index; };
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;

static struct nvmlDevice_st device0 = {0};
static int initialised = 0;
static char uuid[96] = "GPU-12345678-1234-1234-1234-123456780000";
static char name[96] = "NVIDIA A100-SXM4-40GB";
static char driver[80] = "550.163.01";
static unsigned long long memory_mib = 40960;

static void setting(const char *variable, char *target, size_t size) {
    const char *value = getenv(variable);
    if (value != NULL && value[0] != '\0') {
        snprintf(target, size, "%s", value);
    }
}

static nvmlReturn_t copy_out(const char *value, char *out, unsigned int length) {
    if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, value, strlen(value) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void) {
    const char *memory = getenv("MOCK_NVML_MEMORY_MIB");
    setting("MOCK_NVML_UUID", uuid, sizeof uuid);
    setting("MOCK_NVML_NAME", name, sizeof name);
    setting("MOCK_NVML_DRIVER_VERSION", driver, sizeof driver);
    if (memory != NULL && memory[0] != '\0') {
        char *end = NULL;
        unsigned long long value = strtoull(memory, &end, 10);
        if (end == NULL || *end != '\0' || value == 0) return NVML_ERROR_UNKNOWN;
        memory_mib = value;
    }
    initialised = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return nvmlInit_v2(); }

nvmlReturn_t nvmlShutdown(void) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    initialised = 0;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 1;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (index != 0 || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &device0;  /* a real address: Go rejects small integers as pointers */
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *out, unsigned int length) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (device != &device0) return NVML_ERROR_INVALID_ARGUMENT;
    return copy_out(uuid, out, length);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *out, unsigned int length) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (device != &device0) return NVML_ERROR_INVALID_ARGUMENT;
    return copy_out(name, out, length);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (device != &device0 || memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = memory_mib * 1024ULL * 1024ULL;
    memory->used = 0;
    memory->free = memory->total;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *out, unsigned int length) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    return copy_out(driver, out, length);
}

/* The other versioned names go-nvml looks up when it loads: present, and not supported. */
#define NOT_SUPPORTED(symbol) nvmlReturn_t symbol(void) { return NVML_ERROR_NOT_SUPPORTED; }
NOT_SUPPORTED(nvmlDeviceGetPciInfo_v2)
NOT_SUPPORTED(nvmlDeviceGetPciInfo_v3)
NOT_SUPPORTED(nvmlDeviceGetHandleByPciBusId_v2)
NOT_SUPPORTED(nvmlDeviceGetNvLinkRemotePciInfo_v2)
NOT_SUPPORTED(nvmlDeviceGetGridLicensableFeatures_v2)
NOT_SUPPORTED(nvmlDeviceGetGridLicensableFeatures_v3)
NOT_SUPPORTED(nvmlDeviceGetGridLicensableFeatures_v4)
NOT_SUPPORTED(nvmlEventSetWait_v2)
NOT_SUPPORTED(nvmlDeviceGetAttributes_v2)
NOT_SUPPORTED(nvmlComputeInstanceGetInfo_v2)
NOT_SUPPORTED(nvmlDeviceGetComputeRunningProcesses_v2)
NOT_SUPPORTED(nvmlDeviceGetComputeRunningProcesses_v3)
NOT_SUPPORTED(nvmlDeviceGetGraphicsRunningProcesses_v2)
NOT_SUPPORTED(nvmlDeviceGetGraphicsRunningProcesses_v3)
NOT_SUPPORTED(nvmlDeviceGetMPSComputeRunningProcesses_v2)
NOT_SUPPORTED(nvmlDeviceGetMPSComputeRunningProcesses_v3)
NOT_SUPPORTED(nvmlDeviceGetGpuInstancePossiblePlacements_v2)
NOT_SUPPORTED(nvmlVgpuInstanceGetLicenseInfo_v2)
NOT_SUPPORTED(nvmlDeviceGetDriverModel_v2)
