"""Our mock NVML library, compiled here and called through ctypes the way go-nvml calls it.

KAI's reservation app (go-nvml v0.13.0-1) dlopen()s libnvidia-ml.so.1 and calls nvmlInit_v2,
nvmlDeviceGetCount_v2 (it needs exactly one device), nvmlDeviceGetHandleByIndex_v2(0),
nvmlDeviceGetUUID with a 96-byte buffer, nvmlShutdown and nvmlErrorString. The library is
configured per process by environment.
"""

import ctypes
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SOURCE = os.path.join(ROOT, "roles", "sim_cluster", "files", "sim-bin", "mock-nvml", "mock_nvml.c")
UUID_BUFFER = 96  # NVML_DEVICE_UUID_V2_BUFFER_SIZE, what go-nvml passes
GO_NVML_PROBES = [
    "nvmlInit_v2", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetNvLinkRemotePciInfo_v2",
    "nvmlDeviceGetGridLicensableFeatures_v2", "nvmlDeviceGetGridLicensableFeatures_v3", "nvmlDeviceGetGridLicensableFeatures_v4",
    "nvmlEventSetWait_v2", "nvmlDeviceGetAttributes_v2", "nvmlComputeInstanceGetInfo_v2",
    "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetGraphicsRunningProcesses_v2", "nvmlDeviceGetGraphicsRunningProcesses_v3",
    "nvmlDeviceGetMPSComputeRunningProcesses_v2", "nvmlDeviceGetMPSComputeRunningProcesses_v3",
    "nvmlDeviceGetGpuInstancePossiblePlacements_v2", "nvmlVgpuInstanceGetLicenseInfo_v2", "nvmlDeviceGetDriverModel_v2",
]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("nvml") / "libnvidia-ml.so.1")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-Wl,-soname,libnvidia-ml.so.1", "-o", out, SOURCE],
                   check=True)
    return out


def probe(library, env):
    """Run the app's call sequence in a fresh process (the library reads its environment at init)."""
    code = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
lib.nvmlErrorString.restype = ctypes.c_char_p
out = {}
out["init"] = lib.nvmlInit_v2()
count = ctypes.c_uint(0)
out["count_rc"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(count)); out["count"] = count.value
handle = ctypes.c_void_p()
out["handle_rc"] = lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)); out["handle_nonzero"] = bool(handle.value and handle.value > 4096)
out["handle_1_rc"] = lib.nvmlDeviceGetHandleByIndex_v2(1, ctypes.byref(ctypes.c_void_p()))
buf = ctypes.create_string_buffer(96)
out["uuid_rc"] = lib.nvmlDeviceGetUUID(handle, buf, 96); out["uuid"] = buf.value.decode()
small = ctypes.create_string_buffer(8)
out["uuid_small_rc"] = lib.nvmlDeviceGetUUID(handle, small, 8)
name = ctypes.create_string_buffer(96)
out["name_rc"] = lib.nvmlDeviceGetName(handle, name, 96); out["name"] = name.value.decode()
class Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
memory = Memory()
out["memory_rc"] = lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory)); out["memory_total"] = memory.total
out["pci_v3"] = lib.nvmlDeviceGetPciInfo_v3()
out["error_string_3"] = lib.nvmlErrorString(3).decode()
out["shutdown"] = lib.nvmlShutdown()
out["count_after_shutdown"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
print(json.dumps(out))
"""
    import json

    done = subprocess.run([sys.executable, "-c", code, library], capture_output=True, text=True, env=dict(os.environ, **env), check=True)
    return json.loads(done.stdout)


def test_one_device_with_the_configured_uuid_name_and_memory(library):
    uuid = "GPU-12345678-1234-1234-1234-123456780003"
    out = probe(library, {"MOCK_NVML_UUID": uuid, "MOCK_NVML_NAME": "NVIDIA A100-SXM4-40GB", "MOCK_NVML_MEMORY_MIB": "40960"})
    assert (out["init"], out["count_rc"], out["count"]) == (0, 0, 1)
    assert out["handle_rc"] == 0 and out["handle_nonzero"]
    assert out["handle_1_rc"] == 2  # NVML_ERROR_INVALID_ARGUMENT: there is one device
    assert (out["uuid_rc"], out["uuid"]) == (0, uuid)
    assert out["uuid_small_rc"] == 7  # NVML_ERROR_INSUFFICIENT_SIZE
    assert (out["name_rc"], out["name"]) == (0, "NVIDIA A100-SXM4-40GB")
    assert (out["memory_rc"], out["memory_total"]) == (0, 40960 * 1024 * 1024)
    assert out["pci_v3"] == 3 and out["error_string_3"] == "Not Supported"
    assert out["shutdown"] == 0 and out["count_after_shutdown"] == 1  # NVML_ERROR_UNINITIALIZED


def test_defaults_are_the_a100_profiles_first_gpu(library):
    out = probe(library, {})
    assert out["uuid"] == "GPU-12345678-1234-1234-1234-123456780000"
    assert out["name"] == "NVIDIA A100-SXM4-40GB" and out["memory_total"] == 42949672960


def test_a_bad_memory_setting_fails_init(library):
    assert probe(library, {"MOCK_NVML_MEMORY_MIB": "lots"})["init"] == 999


def test_it_exports_every_name_go_nvml_probes_and_the_calls_the_app_makes(library):
    lib = ctypes.CDLL(library)
    for symbol in GO_NVML_PROBES + ["nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetUUID",
                                    "nvmlShutdown", "nvmlErrorString", "nvmlInitWithFlags"]:
        assert hasattr(lib, symbol), symbol
    soname = subprocess.run(["readelf", "-d", library], capture_output=True, text=True, check=True).stdout
    assert "Library soname: [libnvidia-ml.so.1]" in soname
