"""Generate (or check) roles/local_build/files/k8s/go.mod from k8s.io/kubernetes's own go.mod.

k8s.io/kubernetes requires every staging module (k8s.io/api, k8s.io/apiserver, ...)
at v0.0.0 and replaces it with ./staging/src/k8s.io/<m>.  Those replace lines are
ignored when k8s.io/kubernetes is a dependency, so our wrapper module must carry
one `replace k8s.io/<m> => k8s.io/<m> v0.<minor>.<patch>` line per staging module.

The list is derived from the go.mod that `go mod download -json
k8s.io/kubernetes@<K8S_VERSION>` puts in the module cache (its "GoMod" path);
nothing is fetched over HTTP by this script itself.  The `go` and `godebug`
directives are copied too, so the binaries get the same GODEBUG defaults as an
upstream build.

Usage:
  gen-k8s-replaces.py            write k8s/go.mod, then `go mod tidy` (go.sum)
  gen-k8s-replaces.py --no-tidy  write k8s/go.mod only
  gen-k8s-replaces.py --check    exit 1 if k8s/go.mod does not match
  gen-k8s-replaces.py --print    print the replace block only
K8S_VERSION comes from versions.env unless --version is given.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
WRAPPER_DIR = os.path.join(SCRIPT_DIR, "k8s")
# the collection's table of versions (roles/local_build/files -> the collection's root)
VERSIONS_ENV = os.path.join(SCRIPT_DIR, "..", "..", "..", "versions.env")
WRAPPER_MODULE = "sim-bin/k8s"
TOOLS = [
    "k8s.io/kubernetes/cmd/kube-apiserver",
    "k8s.io/kubernetes/cmd/kube-controller-manager",
    "k8s.io/kubernetes/cmd/kube-scheduler",
    "k8s.io/kubernetes/cmd/kubelet",
    # kind's node image: kubeadm sets the node up, kube-proxy serves its Services, kubectl is kind's own
    "k8s.io/kubernetes/cmd/kubeadm",
    "k8s.io/kubernetes/cmd/kube-proxy",
    "k8s.io/kubernetes/cmd/kubectl",
]

STAGING_RE = re.compile(
    r"^\s*(?:replace\s+)?(k8s\.io/[A-Za-z0-9._/-]+)\s*=>\s*\./staging/src/(k8s\.io/[A-Za-z0-9._/-]+)\s*$"
)
GO_RE = re.compile(r"^go\s+(\S+)\s*$")
GODEBUG_LINE_RE = re.compile(r"^godebug\s+(\S+=\S+)\s*$")
GODEBUG_BLOCK_START_RE = re.compile(r"^godebug\s*\(\s*$")
SEMVER_RE = re.compile(r"^v1\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?$")


def die(msg):
    print(f"gen-k8s-replaces: {msg}", file=sys.stderr)
    sys.exit(1)


def read_versions_env(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, value = line.partition("=")
            if not sep:
                die(f"{path}: bad line {line!r}")
            out[key.strip()] = value.strip()
    return out


def go_env():
    env = dict(os.environ)
    env["GOWORK"] = "off"
    env["GOTOOLCHAIN"] = "local"  # never download a Go toolchain
    env.setdefault("GO111MODULE", "on")
    return env


def kubernetes_gomod_path(version):
    # Run outside any module so the wrapper's (possibly stale) go.mod is not consulted.
    with tempfile.TemporaryDirectory(prefix="gen-k8s-replaces.") as tmp:
        proc = subprocess.run(
            ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
            cwd=tmp, env=go_env(), capture_output=True, text=True, check=False,
        )
    try:
        info = json.loads(proc.stdout)
    except json.JSONDecodeError:
        die(f"go mod download failed:\n{proc.stderr}{proc.stdout}")
    if info.get("Error") or proc.returncode != 0:
        die(f"go mod download k8s.io/kubernetes@{version}: {info.get('Error') or proc.stderr}")
    gomod = info.get("GoMod")
    if not gomod or not os.path.isfile(gomod):
        die(f"no GoMod file reported for k8s.io/kubernetes@{version}")
    return gomod


def parse_kubernetes_gomod(path):
    staging, godebug, go_version = [], [], None
    in_godebug_block = False
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.split("//", 1)[0].rstrip()
            if in_godebug_block:
                if line.strip() == ")":
                    in_godebug_block = False
                elif line.strip():
                    godebug.append(line.strip())
                continue
            if GODEBUG_BLOCK_START_RE.match(line):
                in_godebug_block = True
                continue
            m = GODEBUG_LINE_RE.match(line)
            if m:
                godebug.append(m.group(1))
                continue
            m = GO_RE.match(line)
            if m:
                go_version = m.group(1)
                continue
            m = STAGING_RE.match(line)
            if m:
                mod, dirmod = m.groups()
                if mod != dirmod:
                    die(f"unexpected staging replace {mod} => ./staging/src/{dirmod}")
                staging.append(mod)
    if not staging:
        die(f"no ./staging/src replace lines found in {path}")
    if go_version is None:
        die(f"no go directive in {path}")
    return sorted(set(staging)), go_version, godebug


def staging_version(k8s_version):
    m = SEMVER_RE.match(k8s_version)
    if not m:
        die(f"K8S_VERSION {k8s_version!r} is not v1.MINOR.PATCH")
    return f"v0.{m.group(1)}.{m.group(2)}{m.group(3) or ''}"


def render_gomod(k8s_version, staging, go_version, godebug):
    sv = staging_version(k8s_version)
    lines = [
        "// Code generated by roles/local_build/files/gen-k8s-replaces.py from the go.mod of",
        f"// k8s.io/kubernetes@{k8s_version}; DO NOT EDIT. Bump K8S_VERSION in",
        "// versions.env and run roles/local_build/files/build.sh --sync instead.",
        "",
        f"module {WRAPPER_MODULE}",
        "",
        f"go {go_version}",
        "",
    ]
    if godebug:
        if len(godebug) == 1:
            lines += [f"godebug {godebug[0]}", ""]
        else:
            lines += ["godebug ("] + [f"\t{g}" for g in godebug] + [")", ""]
    lines += ["tool ("] + [f"\t{t}" for t in TOOLS] + [")", ""]
    lines += [f"require k8s.io/kubernetes {k8s_version}", ""]
    lines += ["// Staging modules: k8s.io/kubernetes requires them at v0.0.0 and replaces"]
    lines += ["// them with ./staging paths, which Go ignores for a dependency."]
    lines += ["replace ("] + [f"\t{m} => {m} {sv}" for m in staging] + [")", ""]
    return "\n".join(lines)


def check(k8s_version, staging, go_version, godebug):
    gomod = os.path.join(WRAPPER_DIR, "go.mod")
    if not os.path.isfile(gomod):
        return [f"{gomod} does not exist"]
    proc = subprocess.run(["go", "mod", "edit", "-json"], cwd=WRAPPER_DIR,
                          env=go_env(), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return [f"go mod edit -json failed: {proc.stderr.strip()}"]
    cur = json.loads(proc.stdout)
    problems = []
    sv = staging_version(k8s_version)
    if (cur.get("Module") or {}).get("Path") != WRAPPER_MODULE:
        problems.append(f"module path is not {WRAPPER_MODULE}")
    if cur.get("Go") != go_version:
        problems.append(f"go directive {cur.get('Go')} != {go_version}")
    cur_godebug = [f"{g['Key']}={g['Value']}" for g in (cur.get("GoDebug") or cur.get("Godebug") or [])]
    if sorted(cur_godebug) != sorted(godebug):
        problems.append(f"godebug {cur_godebug} != {godebug}")
    cur_tools = sorted(t["Path"] for t in cur.get("Tool") or [])
    if cur_tools != sorted(TOOLS):
        problems.append(f"tool directives {cur_tools} != {sorted(TOOLS)}")
    req = {r["Path"]: r["Version"] for r in cur.get("Require") or []}
    if req.get("k8s.io/kubernetes") != k8s_version:
        problems.append(f"requires k8s.io/kubernetes {req.get('k8s.io/kubernetes')}, want {k8s_version}")
    want = {(m, "", m, sv) for m in staging}
    have = {(r["Old"]["Path"], r["Old"].get("Version", ""), r["New"]["Path"], r["New"].get("Version", ""))
            for r in cur.get("Replace") or []}
    for r in sorted(want - have):
        problems.append(f"missing replace {r[0]} => {r[2]} {r[3]}")
    for r in sorted(have - want):
        problems.append(f"unexpected replace {r[0]} {r[1]} => {r[2]} {r[3]}".replace("  ", " "))
    if not os.path.isfile(os.path.join(WRAPPER_DIR, "go.sum")):
        problems.append("go.sum does not exist")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    ap.add_argument("--version", help="k8s.io/kubernetes version (default: K8S_VERSION from versions.env)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="verify k8s/go.mod, do not write")
    mode.add_argument("--print", action="store_true", help="print the replace block and exit")
    mode.add_argument("--no-tidy", action="store_true", help="write go.mod but do not run go mod tidy")
    args = ap.parse_args()

    version = args.version or read_versions_env(VERSIONS_ENV).get("K8S_VERSION")
    if not version:
        die(f"K8S_VERSION not set in {VERSIONS_ENV}")
    staging, go_version, godebug = parse_kubernetes_gomod(kubernetes_gomod_path(version))
    sv = staging_version(version)

    if args.print:
        print("replace (")
        for m in staging:
            print(f"\t{m} => {m} {sv}")
        print(")")
        return
    if args.check:
        problems = check(version, staging, go_version, godebug)
        if problems:
            print("gen-k8s-replaces: roles/local_build/files/k8s/go.mod is out of date:", file=sys.stderr)
            for p in problems[:8]:
                print(f"  - {p}", file=sys.stderr)
            if len(problems) > 8:
                print(f"  ... and {len(problems) - 8} more", file=sys.stderr)
            print("  run: roles/local_build/files/build.sh --sync   (or roles/local_build/files/gen-k8s-replaces.py)", file=sys.stderr)
            sys.exit(1)
        print(f"gen-k8s-replaces: k8s/go.mod matches k8s.io/kubernetes@{version} "
              f"({len(staging)} staging replaces at {sv})")
        return

    os.makedirs(WRAPPER_DIR, exist_ok=True)
    with open(os.path.join(WRAPPER_DIR, "go.mod"), "w", encoding="utf-8") as f:
        f.write(render_gomod(version, staging, go_version, godebug))
    print(f"gen-k8s-replaces: wrote k8s/go.mod for k8s.io/kubernetes@{version} "
          f"({len(staging)} staging replaces at {sv})")
    if args.no_tidy:
        return
    proc = subprocess.run(["go", "mod", "tidy"], cwd=WRAPPER_DIR, env=go_env(), check=False)
    if proc.returncode != 0:
        die("go mod tidy failed")
    problems = check(version, staging, go_version, godebug)
    if problems:
        die("go.mod does not match after tidy: " + "; ".join(problems))
    print("gen-k8s-replaces: go mod tidy done (k8s/go.mod, k8s/go.sum)")


if __name__ == "__main__":
    main()
