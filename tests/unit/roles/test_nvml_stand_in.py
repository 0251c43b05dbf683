"""Our NVML stand-in library, compiled by the test and called through ctypes the way go-nvml calls it.

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
SOURCE = os.path.join(ROOT, "roles", "nvml_mock", "files", "nvml_stand_in.c")
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
    subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror", "-Wl,-soname,libnvidia-ml.so.1", "-o", out, SOURCE, "-ldl"],
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
class Pci(ctypes.Structure):
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint), ("device", ctypes.c_uint),
                ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint), ("busId", ctypes.c_char * 32)]
pci = Pci()
out["pci_v3"] = lib.nvmlDeviceGetPciInfo_v3(handle, ctypes.byref(pci)); out["bus_id"] = pci.busId.decode()
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
    out = probe(library, {"NVML_STAND_IN_UUID": uuid, "NVML_STAND_IN_NAME": "NVIDIA A100-SXM4-40GB", "NVML_STAND_IN_MEMORY_MIB": "40960"})
    assert (out["init"], out["count_rc"], out["count"]) == (0, 0, 1)
    assert out["handle_rc"] == 0 and out["handle_nonzero"]
    assert out["handle_1_rc"] == 2  # NVML_ERROR_INVALID_ARGUMENT: there is one device
    assert (out["uuid_rc"], out["uuid"]) == (0, uuid)
    assert out["uuid_small_rc"] == 7  # NVML_ERROR_INSUFFICIENT_SIZE
    assert (out["name_rc"], out["name"]) == (0, "NVIDIA A100-SXM4-40GB")
    assert (out["memory_rc"], out["memory_total"]) == (0, 40960 * 1024 * 1024)
    # a PCI address in a domain no host's sysfs holds
    assert out["pci_v3"] == 0 and out["bus_id"] == "00000F00:10:00.0" and out["error_string_3"] == "Not Supported"
    assert out["shutdown"] == 0 and out["count_after_shutdown"] == 1  # NVML_ERROR_UNINITIALIZED


def test_defaults_are_the_a100_profiles_first_gpu(library):
    out = probe(library, {})
    assert out["uuid"] == "GPU-12345678-1234-1234-1234-123456780000"
    assert out["name"] == "NVIDIA A100-SXM4-40GB" and out["memory_total"] == 42949672960


def test_a_bad_memory_setting_fails_init(library):
    assert probe(library, {"NVML_STAND_IN_MEMORY_MIB": "lots"})["init"] == 999


def test_it_exports_every_name_go_nvml_probes_and_the_calls_the_app_makes(library):
    lib = ctypes.CDLL(library)
    for symbol in GO_NVML_PROBES + ["nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetUUID",
                                    "nvmlShutdown", "nvmlErrorString", "nvmlInitWithFlags"]:
        assert hasattr(lib, symbol), symbol
    soname = subprocess.run(["readelf", "-d", library], capture_output=True, text=True, check=True).stdout
    assert "Library soname: [libnvidia-ml.so.1]" in soname


def devices(library, env, calls=""):
    """Every visible device's (uuid, minor) after a nested init, as the device plugin sees them."""
    code = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
out = {"init": [lib.nvmlInit_v2(), lib.nvmlInit_v2()], "shutdown": lib.nvmlShutdown()}
count = ctypes.c_uint(0)
out["count_rc"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
found = []
for index in range(count.value):
    handle = ctypes.c_void_p()
    lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle))
    buf = ctypes.create_string_buffer(96)
    lib.nvmlDeviceGetUUID(handle, buf, 96)
    minor = ctypes.c_uint(99)
    lib.nvmlDeviceGetMinorNumber(handle, ctypes.byref(minor))
    major_cc, minor_cc = ctypes.c_int(), ctypes.c_int()
    lib.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major_cc), ctypes.byref(minor_cc))
    found.append([buf.value.decode(), minor.value, major_cc.value])
out["devices"] = found
if len(found) > 1:
    one, other, level = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int(-1)
    lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(one)); lib.nvmlDeviceGetHandleByIndex_v2(1, ctypes.byref(other))
    out["topology"] = [lib.nvmlDeviceGetTopologyCommonAncestor(one, other, ctypes.byref(level)), level.value]
event_set = ctypes.c_void_p()
out["events"] = [lib.nvmlEventSetCreate(ctypes.byref(event_set)), lib.nvmlEventSetWait_v2(event_set, None, 10), lib.nvmlEventSetFree(event_set)]
out["shutdown_2"] = lib.nvmlShutdown()
out["count_after"] = lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
print(json.dumps(out))
"""
    import json

    done = subprocess.run([sys.executable, "-c", code, library], capture_output=True, text=True,
                          env=dict(dict((k, v) for k, v in os.environ.items() if not k.startswith(("MOCK_NVML", "NVML_STAND_IN"))), **env), check=True)
    return json.loads(done.stdout)


def uuid_of(index):
    return "GPU-12345678-1234-1234-1234-1234567800%02d" % index


def test_n_devices_from_the_config_file_beside_the_library_with_counted_init(tmp_path, library):
    root = tmp_path / "driver"
    (root / "usr" / "lib64").mkdir(parents=True)
    (root / "config").mkdir()
    placed = root / "usr" / "lib64" / "libnvidia-ml.so.1"
    placed.write_bytes(open(library, "rb").read())
    (root / "config" / "nvml-stand-in.conf").write_text("# the a100 profile\nNVML_STAND_IN_COUNT=8\nNVML_STAND_IN_DEV_DIR=%s\n" % (tmp_path / "none"))
    out = devices(str(placed), {})
    assert out["init"] == [0, 0] and out["shutdown"] == 0 and out["count_rc"] == 0  # nested init: still initialised
    assert out["devices"] == [[uuid_of(index), index, 8] for index in range(8)]
    assert out["topology"] == [0, 40]
    assert out["events"] == [0, 10, 0]  # a wait times out (NVML_ERROR_TIMEOUT)
    assert (out["shutdown_2"], out["count_after"]) == (0, 1)  # the last shutdown: uninitialised


def test_a_container_given_some_device_nodes_sees_only_those(tmp_path, library):
    dev = tmp_path / "dev"
    dev.mkdir()
    for index in (2, 5):
        (dev / ("nvidia%d" % index)).write_text("")
    out = devices(library, {"NVML_STAND_IN_COUNT": "8", "NVML_STAND_IN_DEV_DIR": str(dev)})
    assert out["devices"] == [[uuid_of(2), 2, 8], [uuid_of(5), 5, 8]]
    # every node present, or none: every device is seen
    for index in range(8):
        (dev / ("nvidia%d" % index)).write_text("")
    assert len(devices(library, {"NVML_STAND_IN_COUNT": "8", "NVML_STAND_IN_DEV_DIR": str(dev)})["devices"]) == 8


def test_uuids_given_are_used_in_order_and_the_environment_wins_over_the_file(tmp_path, library):
    config = tmp_path / "mock.conf"
    config.write_text("NVML_STAND_IN_UUIDS=GPU-a,GPU-b,GPU-c\nNVML_STAND_IN_DEV_DIR=%s\n" % tmp_path)
    out = devices(library, {"NVML_STAND_IN_CONFIG": str(config)})
    assert [uuid for uuid, minor, cc in out["devices"]] == ["GPU-a", "GPU-b", "GPU-c"]
    out = devices(library, {"NVML_STAND_IN_CONFIG": str(config), "NVML_STAND_IN_UUIDS": "GPU-x,GPU-y"})
    assert [uuid for uuid, minor, cc in out["devices"]] == ["GPU-x", "GPU-y"]


@pytest.mark.parametrize("setting", [{"NVML_STAND_IN_COUNT": "0"}, {"NVML_STAND_IN_COUNT": "65"}, {"NVML_STAND_IN_COUNT": "two"}])
def test_a_bad_count_fails_init(library, setting):
    assert probe(library, setting)["init"] == 999


def test_the_names_before_0_3_0_are_read_with_a_warning_and_the_new_names_win(tmp_path, library):
    """MOCK_NVML_<x> (the file's keys and the environment's) is read as NVML_STAND_IN_<x> until 0.5.0."""
    config = tmp_path / "old.conf"
    config.write_text("MOCK_NVML_UUIDS=GPU-a,GPU-b\nMOCK_NVML_DEV_DIR=%s\n" % tmp_path)
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("MOCK_NVML", "NVML_STAND_IN")))
    code = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); c = ctypes.c_uint(); lib.nvmlInit_v2(); "
            "lib.nvmlDeviceGetCount_v2(ctypes.byref(c)); print(c.value)")
    old = subprocess.run([sys.executable, "-c", code, library], capture_output=True, text=True, check=True,
                         env=dict(env, MOCK_NVML_CONFIG=str(config)))
    assert old.stdout.strip() == "2"
    assert "MOCK_NVML_CONFIG is renamed NVML_STAND_IN_CONFIG" in old.stderr and old.stderr.count("is renamed") == 1
    both = subprocess.run([sys.executable, "-c", code, library], capture_output=True, text=True, check=True,
                          env=dict(env, MOCK_NVML_COUNT="3", NVML_STAND_IN_COUNT="5", NVML_STAND_IN_DEV_DIR=str(tmp_path)))
    assert both.stdout.strip() == "5"
    new = subprocess.run([sys.executable, "-c", code, library], capture_output=True, text=True, check=True,
                         env=dict(env, NVML_STAND_IN_COUNT="4", NVML_STAND_IN_DEV_DIR=str(tmp_path)))
    assert new.stdout.strip() == "4" and new.stderr == ""
