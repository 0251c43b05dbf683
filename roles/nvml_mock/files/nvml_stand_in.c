/*
 * An NVML stand-in library of gpulab.kai_hami: libnvidia-ml.so.1 with N devices, placed where nvml-mock
 * places its own library (the nvml_mock role's mode stand_in).
 * It is not NVIDIA's library and drives no GPU.
 *
 * Two programs load it through NVIDIA's go-nvml, which dlopen()s libnvidia-ml.so.1 with
 * RTLD_LAZY|RTLD_GLOBAL, probes 22 versioned names with dlsym() and calls the newest present:
 *  - KAI's reservation app: nvmlInit_v2, nvmlDeviceGetCount_v2 (it needs exactly one device),
 *    nvmlDeviceGetHandleByIndex_v2(0), nvmlDeviceGetUUID, nvmlShutdown, nvmlErrorString.
 *  - NVIDIA's k8s-device-plugin (the version of versions.env; device discovery by NVML, MIG off): nested
 *    nvmlInit_v2/nvmlShutdown (counted, as NVML counts them), per device GetName, GetUUID,
 *    GetMinorNumber (its /dev/nvidia<minor>), GetPciInfo_v3, GetMemoryInfo,
 *    GetCudaComputeCapability; for a preferred allocation GetTopologyCommonAncestor and
 *    GetNvLinkState; its health checks the event set functions (a wait times out).
 *
 * Configuration, read by the first nvmlInit: KEY=VALUE lines of the file NVML_STAND_IN_CONFIG names,
 * else of <root>/config/nvml-stand-in.conf when the library lies at <root>/usr/lib64/ (where nvml-mock
 * places its files), then the environment, which wins:
 *   NVML_STAND_IN_COUNT           the number of devices (default 1; at most 64)
 *   NVML_STAND_IN_UUIDS           their UUIDs, comma separated (default GPU-12345678-1234-1234-1234-1234567800NN,
 *                                 NN the index with two digits)
 *   NVML_STAND_IN_UUID            one device with this UUID (when NVML_STAND_IN_COUNT and NVML_STAND_IN_UUIDS are unset)
 *   NVML_STAND_IN_NAME            their name (default "NVIDIA A100-SXM4-40GB")
 *   NVML_STAND_IN_MEMORY_MIB      their memory in MiB (default 40960)
 *   NVML_STAND_IN_DRIVER_VERSION  the driver version (default 550.163.01)
 *   NVML_STAND_IN_DEV_DIR         where the device nodes nvidia<N> are looked for (default /dev)
 * The names before gpulab.kai_hami 0.3.0, MOCK_NVML_<x> for NVML_STAND_IN_<x>, are read until 0.5.0 (the new
 * name wins), with a warning on standard error the first time one is used.
 * Visibility, as nvml-mock decides it: when some but not all of the nvidia<N> device nodes exist
 * in NVML_STAND_IN_DEV_DIR (a container the device plugin gave some GPUs), only those devices are
 * seen, in index order; otherwise every device is.
 *
 * Build: gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o libnvidia-ml.so.1 nvml_stand_in.c
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_UNKNOWN = 999,
};
enum { MAX_DEVICES = 64, TOPOLOGY_NODE = 40 };

struct nvmlDevice_st { int index; };
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
struct nvmlEventSet_st { int unused; };
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct { nvmlDevice_t device; unsigned long long eventType, eventData; unsigned int gpuInstanceId, computeInstanceId; } nvmlEventData_t;

static struct nvmlDevice_st devices[MAX_DEVICES];
static int visible[MAX_DEVICES];   /* visible device i is configured device visible[i] */
static int visible_count = 0;
static int configured_count = 1;
static int init_count = 0;
static int configured = 0;
static char uuids[MAX_DEVICES][96];
static char name[96] = "NVIDIA A100-SXM4-40GB";
static char driver[80] = "550.163.01";
static char dev_dir[256] = "/dev";
static unsigned long long memory_mib = 40960;
static int config_error = 0;
static int count_set = 0, uuids_set = 0;
static char single_uuid[96] = "";

static const char OLD_PREFIX[] = "MOCK_NVML_", PREFIX[] = "NVML_STAND_IN_";

/* A key by its name since 0.3.0 (MOCK_NVML_<x> is NVML_STAND_IN_<x>), warning once of an old name. */
static const char *current_key(const char *key, char *buffer, size_t size) {
    static int warned = 0;
    if (strncmp(key, OLD_PREFIX, sizeof OLD_PREFIX - 1) != 0) return key;
    snprintf(buffer, size, "%s%s", PREFIX, key + sizeof OLD_PREFIX - 1);
    if (!warned) {
        fprintf(stderr, "gpulab.kai_hami NVML stand-in: %s is renamed %s since gpulab.kai_hami 0.3.0; the old name is read until 0.5.0\n",
                key, buffer);
        warned = 1;
    }
    return buffer;
}

static void set_value(const char *given, const char *value) {
    char renamed[64];
    const char *key = current_key(given, renamed, sizeof renamed);
    if (strcmp(key, "NVML_STAND_IN_COUNT") == 0) {
        char *end = NULL;
        long count = strtol(value, &end, 10);
        if (end == value || *end != '\0' || count < 1 || count > MAX_DEVICES) { config_error = 1; return; }
        configured_count = (int)count;
        count_set = 1;
    } else if (strcmp(key, "NVML_STAND_IN_UUIDS") == 0) {
        char copy[MAX_DEVICES * 96];
        char *save = NULL, *item;
        int n = 0;
        snprintf(copy, sizeof copy, "%s", value);
        for (item = strtok_r(copy, ",", &save); item != NULL && n < MAX_DEVICES; item = strtok_r(NULL, ",", &save)) {
            snprintf(uuids[n++], sizeof uuids[0], "%s", item);
        }
        if (n == 0) { config_error = 1; return; }
        if (!count_set) configured_count = n;
        uuids_set = n;
    } else if (strcmp(key, "NVML_STAND_IN_UUID") == 0) {
        snprintf(single_uuid, sizeof single_uuid, "%s", value);
    } else if (strcmp(key, "NVML_STAND_IN_NAME") == 0) {
        snprintf(name, sizeof name, "%s", value);
    } else if (strcmp(key, "NVML_STAND_IN_DRIVER_VERSION") == 0) {
        snprintf(driver, sizeof driver, "%s", value);
    } else if (strcmp(key, "NVML_STAND_IN_DEV_DIR") == 0) {
        snprintf(dev_dir, sizeof dev_dir, "%s", value);
    } else if (strcmp(key, "NVML_STAND_IN_MEMORY_MIB") == 0) {
        char *end = NULL;
        unsigned long long mib = strtoull(value, &end, 10);
        if (end == value || *end != '\0' || mib == 0) { config_error = 1; return; }
        memory_mib = mib;
    }
}

static const char *KEYS[] = {"COUNT", "UUIDS", "UUID", "NAME", "DRIVER_VERSION", "DEV_DIR", "MEMORY_MIB", NULL};

static void read_file(const char *path) {
    char line[MAX_DEVICES * 96 + 64];
    FILE *file = fopen(path, "r");
    if (file == NULL) return;
    while (fgets(line, sizeof line, file) != NULL) {
        char *eq, *end = line + strlen(line);
        while (end > line && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ')) *--end = '\0';
        if (line[0] == '#' || line[0] == '\0' || (eq = strchr(line, '=')) == NULL) continue;
        *eq = '\0';
        set_value(line, eq + 1);
    }
    fclose(file);
}

/* <root>/config/nvml-stand-in.conf for a library at <root>/usr/lib64/libnvidia-ml.so.1 */
static void read_default_file(void) {
    Dl_info info;
    char path[512];
    char *cut;
    if (dladdr((void *)read_default_file, &info) == 0 || info.dli_fname == NULL) return;
    snprintf(path, sizeof path, "%s", info.dli_fname);
    cut = strstr(path, "/usr/lib64/");
    if (cut == NULL) return;
    snprintf(cut, sizeof path - (size_t)(cut - path), "/config/nvml-stand-in.conf");
    read_file(path);
}

static void configure(void) {
    const char *file = getenv("NVML_STAND_IN_CONFIG");
    int i, present = 0;
    char node[320], name_old[64], name_new[64];
    if (file == NULL || file[0] == '\0') {
        file = getenv("MOCK_NVML_CONFIG");
        if (file != NULL && file[0] != '\0') current_key("MOCK_NVML_CONFIG", name_new, sizeof name_new);
    }
    if (file != NULL && file[0] != '\0') read_file(file); else read_default_file();
    /* the environment wins over the file, and a name since 0.3.0 over the old one */
    for (i = 0; KEYS[i] != NULL; i++) {
        const char *value;
        snprintf(name_new, sizeof name_new, "%s%s", PREFIX, KEYS[i]);
        snprintf(name_old, sizeof name_old, "%s%s", OLD_PREFIX, KEYS[i]);
        value = getenv(name_new);
        if (value != NULL && value[0] != '\0') { set_value(name_new, value); continue; }
        value = getenv(name_old);
        if (value != NULL && value[0] != '\0') set_value(name_old, value);
    }
    if (!count_set && !uuids_set && single_uuid[0] != '\0') {
        configured_count = 1;
        snprintf(uuids[0], sizeof uuids[0], "%s", single_uuid);
        uuids_set = 1;
    }
    for (i = 0; i < configured_count; i++) {
        devices[i].index = i;
        if (i >= uuids_set) snprintf(uuids[i], sizeof uuids[0], "GPU-12345678-1234-1234-1234-1234567800%02d", i);
    }
    for (i = 0; i < configured_count; i++) {
        snprintf(node, sizeof node, "%s/nvidia%d", dev_dir, i);
        if (access(node, F_OK) == 0) visible[present++] = i;
    }
    if (present == 0 || present == configured_count) {
        for (i = 0; i < configured_count; i++) visible[i] = i;
        present = configured_count;
    }
    visible_count = present;
    configured = 1;
}

static nvmlReturn_t copy_out(const char *value, char *out, unsigned int length) {
    if (out == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, value, strlen(value) + 1);
    return NVML_SUCCESS;
}

/* The configured device a handle stands for, or -1. */
static int device_of(nvmlDevice_t device) {
    if (device < &devices[0] || device >= &devices[configured_count]) return -1;
    return device->index;
}

#define CHECK_DEVICE(device, i) \
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED; \
    if (((i) = device_of(device)) < 0) return NVML_ERROR_INVALID_ARGUMENT

nvmlReturn_t nvmlInit_v2(void) {
    if (!configured) configure();
    if (config_error) return NVML_ERROR_UNKNOWN;
    init_count++;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }
nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return nvmlInit_v2(); }

nvmlReturn_t nvmlShutdown(void) {
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    init_count--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *out, unsigned int length) {
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    return copy_out(driver, out, length);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (count == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned int)visible_count;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (index >= (unsigned int)visible_count || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &devices[visible[index]];  /* a real address: Go rejects small integers as pointers */
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    int i;
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (uuid == NULL || device == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    for (i = 0; i < visible_count; i++) {
        if (strcmp(uuids[visible[i]], uuid) == 0) { *device = &devices[visible[i]]; return NVML_SUCCESS; }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *out, unsigned int length) {
    int i;
    CHECK_DEVICE(device, i);
    return copy_out(uuids[i], out, length);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *out, unsigned int length) {
    int i;
    CHECK_DEVICE(device, i);
    return copy_out(name, out, length);
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minor) {
    int i;
    CHECK_DEVICE(device, i);
    if (minor == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *minor = (unsigned int)i;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    int i;
    CHECK_DEVICE(device, i);
    if (memory == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    memory->total = memory_mib * 1024ULL * 1024ULL;
    memory->used = 0;
    memory->free = memory->total;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor) {
    int i;
    CHECK_DEVICE(device, i);
    if (major == NULL || minor == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *major = 8;
    *minor = 0;
    return NVML_SUCCESS;
}

/* PCI addresses in domain 0x0f00, which no host's sysfs holds: the device plugin finds no NUMA node. */
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci) {
    int i;
    CHECK_DEVICE(device, i);
    if (pci == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof *pci);
    pci->domain = 0x0f00;
    pci->bus = (unsigned int)(0x10 + i);
    pci->pciDeviceId = 0x20b010de;
    snprintf(pci->busId, sizeof pci->busId, "00000F00:%02X:00.0", pci->bus);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "0F00:%02X:00.0", pci->bus);
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t *pci) { return nvmlDeviceGetPciInfo_v3(device, pci); }
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t *pci) { return nvmlDeviceGetPciInfo_v3(device, pci); }

/* Every pair of devices shares a NUMA node (NVML_TOPOLOGY_NODE); no NVLink. */
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t one, nvmlDevice_t other, int *level) {
    int i, j;
    CHECK_DEVICE(one, i);
    if ((j = device_of(other)) < 0 || level == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    (void)i;
    *level = TOPOLOGY_NODE;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *active) {
    (void)device; (void)link; (void)active;
    return NVML_ERROR_NOT_SUPPORTED;
}

/* Health events: a set that never fires; a wait sleeps its timeout and times out. */
static struct nvmlEventSet_st event_set;
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    if (init_count == 0) return NVML_ERROR_UNINITIALIZED;
    if (set == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *set = &event_set;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) { (void)set; return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *types) {
    int i;
    CHECK_DEVICE(device, i);
    if (types == NULL) return NVML_ERROR_INVALID_ARGUMENT;
    *types = 0x0000000000000008ULL | 0x0000000000000004ULL;  /* Xid critical error, double-bit ECC */
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types, nvmlEventSet_t set) {
    int i;
    CHECK_DEVICE(device, i);
    (void)types; (void)set;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms) {
    struct timespec pause;
    (void)set; (void)data;
    pause.tv_sec = timeout_ms / 1000;
    pause.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
    nanosleep(&pause, NULL);
    return NVML_ERROR_TIMEOUT;
}
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms) {
    return nvmlEventSetWait_v2(set, data, timeout_ms);
}

/* The other versioned names go-nvml looks up when it loads: present, and not supported. */
#define NOT_SUPPORTED(symbol) nvmlReturn_t symbol(void) { return NVML_ERROR_NOT_SUPPORTED; }
NOT_SUPPORTED(nvmlDeviceGetHandleByPciBusId_v2)
NOT_SUPPORTED(nvmlDeviceGetNvLinkRemotePciInfo_v2)
NOT_SUPPORTED(nvmlDeviceGetGridLicensableFeatures_v2)
NOT_SUPPORTED(nvmlDeviceGetGridLicensableFeatures_v3)
NOT_SUPPORTED(nvmlDeviceGetGridLicensableFeatures_v4)
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
