#!/usr/bin/env bash
# Build the programs the collection runs without a registry, from Go modules only (and two small C
# files): the sim's control plane (kube-apiserver, kube-controller-manager, kube-scheduler, etcd,
# kwok, kwokctl, kwok-stages, kai-crds), KAI-scheduler's programs (kai-scheduler, kai-binder,
# kai-admission, kai-podgrouper, kai-podgroupcontroller, kai-queuecontroller,
# kai-resourcereservation, kai-operator; and kai-chart, KAI's Helm chart read from its module;
# run.ai's kwok-operator and its CRDs, which KAI's scale suite drives), the
# real node's programs (kubelet, containerd, containerd-shim-runc-v2, ctr, runc, crictl, the CNI
# plugins cni/bridge, cni/host-local and cni/loopback, NVIDIA's nvidia-device-plugin, Kubernetes'
# pause from the C file in Kubernetes' module), kind's node image's (kubeadm, kube-proxy, kubectl,
# coredns) and the collection's NVML stand-in library
# (nvml-stand-in/libnvidia-ml.so.1, from roles/nvml_mock/files/nvml_stand_in.c), into a cache
# directory keyed by the versions of the collection's table (versions.env at its root). Nothing
# prebuilt is ever downloaded: Go modules come from GOPROXY and are checked against the committed
# go.sum files (GOTOOLCHAIN=local, so no Go toolchain is downloaded either).
#
# Usage:
#   roles/local_build/files/build.sh                 build what is missing, reuse the rest
#   roles/local_build/files/build.sh --sync          after a version of the table changed: regenerate the
#                                                    wrapper modules' go.mod/go.sum (then commit)
#   roles/local_build/files/build.sh --print-bin-dir print the bin dir and exit (never asks the network)
#
# Environment:
#   SIM_BIN_DIR    output dir (default $SIM_BIN_ROOT/<key>/bin)
#   SIM_BIN_ROOT   cache root (default: <checkout>/.cache/sim-bin in a git checkout of the collection,
#                  else ${XDG_CACHE_HOME:-~/.cache}/gpulab-kai-hami/sim-bin)
#   SIM_BIN_ONLY   build only these binaries (space/comma separated names)
#   SIM_BIN_SKIP   skip these binaries (space/comma separated names)
#   SIM_BIN_FORCE  1 = rebuild even if the cached binary reports the right version
#   SIM_BIN_GOGC   the Go compiler's and linker's GOGC (default 400: they collect garbage less often,
#                  which makes a cold build about 15% faster for about 40% more memory; 100 is Go's own)
#   KAI_E2E_SUITES also build these of KAI's own end-to-end suites (packages under KAI's
#                  test/e2e/suites, e.g. "allocate/quota api/events", and "scale" for test/e2e/scale;
#                  space separated) as Ginkgo test binaries, `go test -c`, into
#                  <bin dir>/kai-e2e/<suite with / as ->.test
#
# Output: one line per binary ("built"/"cached", seconds, peak RSS of the build),
# then the bin dir on the last line.  Exit status 1 if any binary failed.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# roles/local_build/files -> the collection's root, where its table of versions is
COLLECTION_ROOT="$(cd "${SCRIPT_DIR}/../../.." && pwd -P)"
ROLES_DIR="${COLLECTION_ROOT}/roles"
VERSIONS_ENV="${COLLECTION_ROOT}/versions.env"

die() { echo "build.sh: $*" >&2; exit 1; }

MODE=build
case "${1:-}" in
  "") ;;
  --sync) MODE=sync ;;
  --print-bin-dir) MODE=print ;;
  -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument: $1 (see --help)" ;;
esac

# --- the table's versions -----------------------------------------------------
[[ -f "${VERSIONS_ENV}" ]] || die "missing ${VERSIONS_ENV}"
while IFS= read -r line || [[ -n "${line}" ]]; do
  line="${line%%$'\r'}"
  [[ "${line}" =~ ^[[:space:]]*(#|$) ]] && continue
  [[ "${line}" =~ ^([A-Z][A-Z0-9_]*)=([^[:space:]]*)$ ]] || die "versions.env: bad line: ${line}"
  printf -v "${BASH_REMATCH[1]}" '%s' "${BASH_REMATCH[2]}"
done < "${VERSIONS_ENV}"
for v in K8S_VERSION ETCD_VERSION KWOK_VERSION KAI_BUILD_VERSION CONTAINERD_VERSION RUNC_VERSION CNI_PLUGINS_VERSION CRI_TOOLS_VERSION DEVICE_PLUGIN_VERSION; do
  [[ -n "${!v:-}" ]] || die "${v} is not set in versions.env"
  [[ "${!v}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]] || die "${v}=${!v} is not a vX.Y.Z version"
done
[[ -n "${KAI_BUILD_MODULE:-}" ]] || die "KAI_BUILD_MODULE is not set in versions.env"

# --- KAI: the version the table pins, from the module path it names ------------------
# KAI's programs import KAI's own module path; where the table names another path (KAI's old one,
# where the Go module proxy serves no version under KAI's own), the wrapper replaces KAI's path with it. The wrapper's go.mod is kai/go.mod when it requires the table's version,
# else kai/go.<version>.mod (build.sh --sync writes it).
KAI_VERSION="${KAI_BUILD_VERSION}"
KAI_SOURCE_MODULE="${KAI_BUILD_MODULE}"
if grep -q "^require github.com/kai-scheduler/KAI-scheduler ${KAI_VERSION}\$\|^[[:space:]]github.com/kai-scheduler/KAI-scheduler ${KAI_VERSION}\$" "${SCRIPT_DIR}/kai/go.mod" 2>/dev/null; then
  KAI_MODFILE=go.mod
else
  KAI_MODFILE="go.${KAI_VERSION}.mod"
fi

# One rule for every caller (make, the roles, Molecule, the tests): in a checkout of the collection
# (a git work tree with its Makefile) the checkout's ignored .cache/sim-bin; in an installed
# collection the user's cache directory.
if [[ -e "${COLLECTION_ROOT}/.git" && -f "${COLLECTION_ROOT}/Makefile" ]]; then
  DEFAULT_BIN_ROOT="${COLLECTION_ROOT}/.cache/sim-bin"
else
  DEFAULT_BIN_ROOT="${XDG_CACHE_HOME:-${HOME}/.cache}/gpulab-kai-hami/sim-bin"
fi
SIM_BIN_ROOT="${SIM_BIN_ROOT:-${DEFAULT_BIN_ROOT}}"
# The bin dir: keyed by every version it is built from (read from versions.env above).
SIM_BIN_DIR="${SIM_BIN_DIR:-${SIM_BIN_ROOT}/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_kai-${KAI_VERSION}/bin}"
if [[ "${MODE}" == print ]]; then echo "${SIM_BIN_DIR}"; exit 0; fi

# --- Go environment ---------------------------------------------------------
command -v go >/dev/null 2>&1 || { [[ -x /usr/local/go/bin/go ]] && PATH="/usr/local/go/bin:${PATH}"; }
command -v go >/dev/null 2>&1 || die "go not found in PATH"
export GOWORK=off          # never pick up a go.work from a parent directory
export GOTOOLCHAIN=local   # never download a Go toolchain (a prebuilt binary)
export GO111MODULE=on
export CGO_ENABLED=0
case " ${GOFLAGS:-} " in *" -buildvcs="*) ;; *) export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-buildvcs=false" ;; esac

# --- KAI's module comes from its old path, whose go.mod the proxy does not serve -------
# kai_local_proxy: put the served zip and info of ${KAI_SOURCE_MODULE}@${KAI_VERSION}, and the
# go.mod inside that zip, into a file proxy in front of GOPROXY. go.sum (committed) pins the
# hashes of both the zip and the go.mod, so Go rejects anything else.
kai_local_proxy() {
  local proxy_dir; proxy_dir="$(dirname "${SIM_BIN_DIR}")/goproxy"
  mkdir -p "${proxy_dir}"
  python3 - "${proxy_dir}" "${KAI_SOURCE_MODULE}" "${KAI_VERSION}" "$(go env GOPROXY)" <<'PY'
import os, re, sys, urllib.request, zipfile
root, module, version, goproxy = sys.argv[1:]
escaped = re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), module)
target = os.path.join(root, escaped, "@v")
os.makedirs(target, exist_ok=True)
upstream = next(p for p in re.split(r"[,|]", goproxy) if p.startswith("http"))
for ext in ("info", "zip"):
    path = os.path.join(target, version + "." + ext)
    if not os.path.exists(path):
        with urllib.request.urlopen("%s/%s/@v/%s.%s" % (upstream.rstrip("/"), escaped, version, ext), timeout=300) as r:
            data = r.read()
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
with zipfile.ZipFile(os.path.join(target, version + ".zip")) as z:
    with open(os.path.join(target, version + ".mod"), "wb") as f:
        f.write(z.read("%s@%s/go.mod" % (module, version)))
with open(os.path.join(target, "list"), "w") as f:
    f.write(version + "\n")
PY
  echo "file://$(cd "${proxy_dir}" && pwd),$(go env GOPROXY)"
}

# --- --sync: regenerate go.mod/go.sum of the wrapper modules ----------------
if [[ "${MODE}" == sync ]]; then
  echo "sync k8s  -> k8s.io/kubernetes@${K8S_VERSION}"
  python3 "${SCRIPT_DIR}/gen-k8s-replaces.py"
  echo "sync etcd -> go.etcd.io/etcd/server/v3@${ETCD_VERSION}"
  (cd "${SCRIPT_DIR}/etcd" && go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" && go mod tidy)
  echo "sync kwok -> sigs.k8s.io/kwok@${KWOK_VERSION}"
  (cd "${SCRIPT_DIR}/kwok" && go get "sigs.k8s.io/kwok@${KWOK_VERSION}" && go mod tidy)
  echo "sync node -> containerd ${CONTAINERD_VERSION}, runc ${RUNC_VERSION}, CNI plugins ${CNI_PLUGINS_VERSION}, cri-tools ${CRI_TOOLS_VERSION}"
  (cd "${SCRIPT_DIR}/node" && go get "github.com/containerd/containerd/v2@${CONTAINERD_VERSION}" \
     "github.com/opencontainers/runc@${RUNC_VERSION}" "github.com/containernetworking/plugins@${CNI_PLUGINS_VERSION}" \
     "sigs.k8s.io/cri-tools@${CRI_TOOLS_VERSION}" && go mod tidy)
  echo "sync coredns -> github.com/coredns/coredns@${COREDNS_VERSION}"
  (cd "${SCRIPT_DIR}/coredns" && go get -tool "github.com/coredns/coredns@${COREDNS_VERSION}" && go mod tidy)
  echo "sync device-plugin -> github.com/NVIDIA/k8s-device-plugin@${DEVICE_PLUGIN_VERSION}"
  (cd "${SCRIPT_DIR}/device-plugin" && go get "github.com/NVIDIA/k8s-device-plugin@${DEVICE_PLUGIN_VERSION}" && go mod tidy)
  echo "sync kai  -> github.com/kai-scheduler/KAI-scheduler@${KAI_VERSION} into kai/${KAI_MODFILE}" \
       "(keep its replace lines in step with KAI's own go.mod)"
  kai_proxy="$(go env GOPROXY)"
  [[ "${KAI_SOURCE_MODULE}" != github.com/kai-scheduler/KAI-scheduler ]] && kai_proxy="$(kai_local_proxy)"
  [[ -f "${SCRIPT_DIR}/kai/${KAI_MODFILE}" ]] || cp "${SCRIPT_DIR}/kai/go.mod" "${SCRIPT_DIR}/kai/${KAI_MODFILE}"
  (cd "${SCRIPT_DIR}/kai" \
     && if [[ "${KAI_SOURCE_MODULE}" != github.com/kai-scheduler/KAI-scheduler ]]; then
          go mod edit -modfile="${KAI_MODFILE}" \
            -replace "github.com/kai-scheduler/KAI-scheduler@${KAI_VERSION}=${KAI_SOURCE_MODULE}@${KAI_VERSION}"
        fi \
     && GOPROXY="${kai_proxy}" go get -modfile="${KAI_MODFILE}" "github.com/kai-scheduler/KAI-scheduler@${KAI_VERSION}" \
     && echo "sync kai  -> run.ai's kwok-operator ${KWOK_OPERATOR_VERSION} as a tool of the wrapper (KAI's scale suite drives it)" \
     && GOPROXY="${kai_proxy}" go get -modfile="${KAI_MODFILE}" -tool "github.com/run-ai/kwok-operator/cmd@${KWOK_OPERATOR_VERSION}" \
     && GOPROXY="${kai_proxy}" go mod tidy -modfile="${KAI_MODFILE}" \
     && echo "sync kai  -> go.sum lines for the test dependencies of KAI's e2e suites (make kai-e2e)" \
     && GOPROXY="${kai_proxy}" GOFLAGS=-mod=mod go list -modfile="${KAI_MODFILE}" -e -test -deps \
          github.com/kai-scheduler/KAI-scheduler/test/e2e/suites/... github.com/kai-scheduler/KAI-scheduler/test/e2e/scale >/dev/null)
  echo "sync done: review and commit roles/local_build/files/*/go.mod and go.sum"
  exit 0
fi

# --- helpers ----------------------------------------------------------------
mkdir -p "${SIM_BIN_DIR}"
LOG_DIR="${SIM_BIN_DIR}/.build-logs"
mkdir -p "${LOG_DIR}"
HAVE_TIME=0; [[ -x /usr/bin/time ]] && HAVE_TIME=1
FAILED=()

selected() {  # selected NAME -> is NAME to be handled in this run?
  local name="$1" list
  list=" ${SIM_BIN_SKIP:-} "; list="${list//,/ }"
  [[ "${list}" == *" ${name} "* ]] && return 1
  [[ -z "${SIM_BIN_ONLY:-}" ]] && return 0
  list=" ${SIM_BIN_ONLY} "; list="${list//,/ }"
  [[ "${list}" == *" ${name} "* ]]
}

# version_ok BIN EXPECTED: does `BIN --version` print a line that is EXPECTED, or
# EXPECTED followed by a space and more (e.g. "kwok version <version> go1.26.8 (linux/amd64)")?
# EXPECTED "gomod MODULE VERSION" instead checks the module versions Go recorded in BIN
# (for programs without a --version flag, e.g. KAI's).
version_ok() {
  local out l
  [[ -x "$1" ]] || return 1
  if [[ "$2" == "gomod "* ]]; then
    local want; want="$(awk '{print $2 "\t" $3}' <<<"$2")"
    go version -m "$1" 2>/dev/null | grep -qE "^[[:space:]]+(dep|mod)[[:space:]]+${want//./\\.}([[:space:]]|$)"
    return
  fi
  out="$(timeout 20 "$1" --version 2>&1)" || return 1
  while IFS= read -r l; do
    [[ "${l}" == "$2" || "${l}" == "$2 "* ]] && return 0
  done <<<"${out}"
  return 1
}

elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# required_version DIR MODULE: version of MODULE required by DIR/go.mod.
required_version() {
  (cd "$1" && go mod edit -json) | python3 -c '
import json, sys
mod = sys.argv[1]
for r in json.load(sys.stdin).get("Require") or []:
    if r["Path"] == mod:
        print(r["Version"])
' "$2"
}

# check_wrapper NAME DIR MODULE VERSION: the wrapper module pins MODULE@VERSION and has a go.sum.
check_wrapper() {
  local name="$1" dir="$2" mod="$3" want="$4" have
  have="$(required_version "${dir}" "${mod}")"
  if [[ "${have}" != "${want}" ]]; then
    echo "build.sh: ${dir#"${SCRIPT_DIR}"/}/go.mod requires ${mod} ${have:-<none>}, versions.env says ${want};" \
         "run: roles/local_build/files/build.sh --sync" >&2
    return 1
  fi
  if [[ ! -s "${dir}/go.sum" ]]; then
    echo "build.sh: ${dir#"${SCRIPT_DIR}"/}/go.sum is missing; run: roles/local_build/files/build.sh --sync" >&2
    return 1
  fi
}

# build_one NAME WRAPPER_DIR PACKAGE EXPECTED_VERSION_LINE LDFLAGS [go build flags...]
# (CGO_ENABLED comes from BUILD_CGO, default 0; BUILD_TEST=1 builds PACKAGE's test binary, go test -c.)
build_one() {
  local name="$1" dir="$2" pkg="$3" expect="$4" ldflags="$5"
  shift 5
  local -a extra=("$@")
  local bin="${SIM_BIN_DIR}/${name}" log="${LOG_DIR}/${name}.log" tmp t0 t1 secs rss="" line
  selected "${name}" || return 0
  t0="$(date +%s.%N)"
  if [[ "${SIM_BIN_FORCE:-0}" != 1 ]] && version_ok "${bin}" "${expect}"; then
    t1="$(date +%s.%N)"
    printf '%-24s cached  %6ss  (%s)\n' "${name}" "$(elapsed "${t0}" "${t1}")" "${expect}"
    return 0
  fi
  tmp="${bin}.tmp.$$"
  rm -f "${tmp}"
  local -a verb=(build); [[ "${BUILD_TEST:-0}" == 1 ]] && verb=(test -c)
  mkdir -p "$(dirname "${bin}")" "$(dirname "${log}")"
  local -a cmd=(env CGO_ENABLED="${BUILD_CGO:-0}" GOGC="${SIM_BIN_GOGC:-400}" go "${verb[@]}" -trimpath "${extra[@]}" -ldflags "${ldflags}" -o "${tmp}" "${pkg}")
  if [[ "${HAVE_TIME}" == 1 ]]; then
    cmd=(/usr/bin/time -f 'SIMBIN_TIME %e %M' -o "${log}.time" "${cmd[@]}")
  fi
  if ! (cd "${dir}" && "${cmd[@]}") >"${log}" 2>&1; then
    rm -f "${tmp}"
    echo "build.sh: building ${name} (${pkg}) failed; last lines of ${log}:" >&2
    tail -n 25 "${log}" >&2
    FAILED+=("${name}")
    return 0
  fi
  t1="$(date +%s.%N)"
  secs="$(elapsed "${t0}" "${t1}")"
  if [[ -f "${log}.time" ]] && line="$(grep '^SIMBIN_TIME ' "${log}.time")"; then
    rss="$(awk '{printf "%d", $3/1024}' <<<"${line}")"
  fi
  chmod 0755 "${tmp}"
  if ! version_ok "${tmp}" "${expect}"; then
    echo "build.sh: ${name} built but does not report '${expect}':" >&2
    if [[ "${expect}" == "gomod "* ]]; then go version -m "${tmp}" | head -n 20 >&2 || true; else timeout 20 "${tmp}" --version >&2 || true; fi
    rm -f "${tmp}"
    FAILED+=("${name}")
    return 0
  fi
  mv -f "${tmp}" "${bin}"
  printf '%-24s built   %6ss  (%s)%s\n' "${name}" "${secs}" "${expect}" "${rss:+  peak RSS ${rss} MiB}"
}

# kwok_operator_crds: kwok-operator's CRDs (config/crd/bases of its module, the version the kai
# wrapper resolves) into <bin dir>/kwok-operator-crds, never into the checkout.
kwok_operator_crds() {
  local t0 src dest="${SIM_BIN_DIR}/kwok-operator-crds" source="github.com/run-ai/kwok-operator ${KWOK_OPERATOR_VERSION}"
  t0="$(date +%s.%N)"
  if [[ "${SIM_BIN_FORCE:-0}" != 1 && "$(cat "${dest}/source" 2>/dev/null)" == "${source}" ]]; then
    printf '%-24s cached  %6ss  (%s)\n' kwok-operator-crds "$(elapsed "${t0}" "$(date +%s.%N)")" "config/crd/bases of ${source}"
    return 0
  fi
  src="$(cd "${SCRIPT_DIR}/kai" && GOFLAGS=-mod=mod go mod download -json "${KAI_FLAGS[@]}" "github.com/run-ai/kwok-operator@${KWOK_OPERATOR_VERSION}" \
         | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir",""))')" || src=""
  if ! compgen -G "${src}/config/crd/bases/*.yaml" >/dev/null; then
    echo "build.sh: kwok-operator's CRDs (config/crd/bases) not found in its module (${src:-not downloaded})" >&2
    FAILED+=(kwok-operator-crds)
    return 0
  fi
  rm -rf "${dest}.tmp" && mkdir -p "${dest}.tmp"
  cp "${src}"/config/crd/bases/*.yaml "${dest}.tmp/"
  chmod -R u+w "${dest}.tmp"
  echo "${source}" >"${dest}.tmp/source"
  rm -rf "${dest}" && mv "${dest}.tmp" "${dest}"
  printf '%-24s copied  %6ss  (%s)\n' kwok-operator-crds "$(elapsed "${t0}" "$(date +%s.%N)")" "config/crd/bases of ${source}"
}

# --- Kubernetes -------------------------------------------------------------
K8S_DIR="${SCRIPT_DIR}/k8s"
K8S_MINOR="$(cut -d. -f2 <<<"${K8S_VERSION}")"
K8S_MAJOR="$(cut -d. -f1 <<<"${K8S_VERSION#v}")"
K8S_LDFLAGS="-s -w"
K8S_LDFLAGS+=" -X k8s.io/component-base/version.gitVersion=${K8S_VERSION}"
K8S_LDFLAGS+=" -X k8s.io/component-base/version.gitMajor=${K8S_MAJOR}"
K8S_LDFLAGS+=" -X k8s.io/component-base/version.gitMinor=${K8S_MINOR}"
K8S_LDFLAGS+=" -X k8s.io/component-base/version.gitTreeState=clean"
K8S_LDFLAGS+=" -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"
# The same X flags for the copy of the version vars in k8s.io/client-go.
K8S_LDFLAGS+=" -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION}"
K8S_LDFLAGS+=" -X k8s.io/client-go/pkg/version.gitMajor=${K8S_MAJOR}"
K8S_LDFLAGS+=" -X k8s.io/client-go/pkg/version.gitMinor=${K8S_MINOR}"
K8S_LDFLAGS+=" -X k8s.io/client-go/pkg/version.gitTreeState=clean"
K8S_LDFLAGS+=" -X k8s.io/client-go/pkg/version.buildDate=1970-01-01T00:00:00Z"

K8S_BINS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubeadm kubectl)
k8s_wanted=0
for b in "${K8S_BINS[@]}"; do selected "${b}" && k8s_wanted=1; done
if [[ "${k8s_wanted}" == 1 ]]; then
  if python3 "${SCRIPT_DIR}/gen-k8s-replaces.py" --check >/dev/null; then
    for b in "${K8S_BINS[@]}"; do
      # kubeadm and kubectl have no --version flag: the module version Go recorded in them is checked
      expect="Kubernetes ${K8S_VERSION}"
      [[ "${b}" == kubeadm || "${b}" == kubectl ]] && expect="gomod k8s.io/kubernetes ${K8S_VERSION}"
      build_one "${b}" "${K8S_DIR}" "k8s.io/kubernetes/cmd/${b}" "${expect}" "${K8S_LDFLAGS}"
    done
  else
    for b in "${K8S_BINS[@]}"; do selected "${b}" && FAILED+=("${b}"); done
  fi
fi

# --- etcd -------------------------------------------------------------------
if selected etcd; then
  if check_wrapper etcd "${SCRIPT_DIR}/etcd" go.etcd.io/etcd/server/v3 "${ETCD_VERSION}"; then
    build_one etcd "${SCRIPT_DIR}/etcd" . "etcd Version: ${ETCD_VERSION#v}" \
      "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=gomod-${ETCD_VERSION}"
  else
    FAILED+=(etcd)
  fi
fi

# --- kwok, kwokctl ----------------------------------------------------------
if selected kwok || selected kwokctl || selected kwok-stages; then
  # KubeVersion is only kwokctl's default when nothing else says otherwise;
  # point it at our Kubernetes version as kwok's release builds do.
  KWOK_LDFLAGS="-s -w -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${K8S_VERSION#v}"
  if check_wrapper kwok "${SCRIPT_DIR}/kwok" sigs.k8s.io/kwok "${KWOK_VERSION}"; then
    build_one kwok "${SCRIPT_DIR}/kwok" sigs.k8s.io/kwok/cmd/kwok \
      "kwok version ${KWOK_VERSION}" "${KWOK_LDFLAGS}"
    build_one kwokctl "${SCRIPT_DIR}/kwok" sigs.k8s.io/kwok/cmd/kwokctl \
      "kwokctl version ${KWOK_VERSION}" "${KWOK_LDFLAGS}"
    # Ours: rebuilt when its source changes (the version line names the source's hash).
    stages_sha="$(sha256sum "${SCRIPT_DIR}/kwok/cmd/kwok-stages/main.go" | cut -c1-12)"
    build_one kwok-stages "${SCRIPT_DIR}/kwok" ./cmd/kwok-stages \
      "kwok-stages sigs.k8s.io/kwok ${KWOK_VERSION} source ${stages_sha}" "-s -w -X main.source=${stages_sha}"
  else
    selected kwok && FAILED+=(kwok)
    selected kwokctl && FAILED+=(kwokctl)
    selected kwok-stages && FAILED+=(kwok-stages)
  fi
fi

# --- KAI-scheduler ----------------------------------------------------------
# The kai wrapper module pins KAI with one go.mod per version (kai/go.mod, or kai/go.<version>.mod
# for another version, see above). It is built from a copy in the cache, so that go.sum lines Go adds (checked against the checksum database) never touch
# the checkout.
KAI_PROGRAMS=(scheduler binder admission podgrouper podgroupcontroller queuecontroller resourcereservation operator)
kai_wanted=0
selected kai-crds && kai_wanted=1
selected kai-chart && kai_wanted=1
selected kwok-operator && kai_wanted=1
for p in "${KAI_PROGRAMS[@]}"; do selected "kai-${p}" && kai_wanted=1; done
if [[ "${kai_wanted}" == 1 ]]; then
  echo "KAI ${KAI_VERSION} from ${KAI_SOURCE_MODULE} (versions.env: KAI_BUILD_VERSION, KAI_BUILD_MODULE)" >&2
  if [[ "${KAI_SOURCE_MODULE}" != github.com/kai-scheduler/KAI-scheduler ]]; then
    GOPROXY="$(kai_local_proxy)"
    export GOPROXY
  fi
  kai_mod_dir="$(dirname "${SIM_BIN_DIR}")/kai-mod"
  mkdir -p "${kai_mod_dir}"
  kai_modfile="${SCRIPT_DIR}/kai/${KAI_MODFILE}"
  if [[ ! -f "${kai_modfile}" ]]; then
    echo "build.sh: kai/${KAI_MODFILE} is missing; run: roles/local_build/files/build.sh --sync" >&2
    FAILED+=(kai)
  else
    cp "${kai_modfile}" "${kai_mod_dir}/go.mod"
    cp "${kai_modfile%.mod}.sum" "${kai_mod_dir}/go.sum" 2>/dev/null || : >"${kai_mod_dir}/go.sum"
    KAI_FLAGS=(-modfile="${kai_mod_dir}/go.mod")
    kai_ok=1
    have="$(cd "${SCRIPT_DIR}/kai" && go mod edit -json "${kai_mod_dir}/go.mod" | python3 -c '
import json, sys
print(next((r["Version"] for r in json.load(sys.stdin).get("Require") or [] if r["Path"] == "github.com/kai-scheduler/KAI-scheduler"), ""))')"
    if [[ "${have}" != "${KAI_VERSION}" ]]; then
      echo "build.sh: kai/${KAI_MODFILE} requires KAI ${have:-<none>}, the table says ${KAI_VERSION}; run build.sh --sync" >&2
      kai_ok=0
    elif ! grep -q "^github.com/${KAI_SOURCE_MODULE#github.com/} ${KAI_VERSION} h1:\|^github.com/kai-scheduler/KAI-scheduler ${KAI_VERSION} h1:" "${kai_mod_dir}/go.sum"; then
      # No committed hash for KAI itself: Go adds it after checking the checksum database.
      (cd "${SCRIPT_DIR}/kai" && go mod download "${KAI_FLAGS[@]}" github.com/kai-scheduler/KAI-scheduler) \
        >"${LOG_DIR}/kai-download.log" 2>&1 || { tail -n 20 "${LOG_DIR}/kai-download.log" >&2; kai_ok=0; }
    fi
    if [[ "${kai_ok}" == 1 ]]; then
      build_one kai-crds "${SCRIPT_DIR}/kai" ./cmd/kai-crds \
        "kai-crds github.com/kai-scheduler/KAI-scheduler ${KAI_VERSION}" "-s -w" "${KAI_FLAGS[@]}"
      for p in "${KAI_PROGRAMS[@]}"; do
        # The reservation app links NVIDIA's go-nvml, which needs cgo.
        BUILD_CGO=0; [[ "${p}" == resourcereservation ]] && BUILD_CGO=1
        BUILD_CGO="${BUILD_CGO}" build_one "kai-${p}" "${SCRIPT_DIR}/kai" \
          "github.com/kai-scheduler/KAI-scheduler/cmd/${p}" \
          "gomod github.com/kai-scheduler/KAI-scheduler ${KAI_VERSION}" "-s -w" "${KAI_FLAGS[@]}"
      done
      # KAI's chart and its CRD upgrader's script, read from KAI's module into the cache (never into
      # the checkout): the kai_scheduler role installs the chart on the sim's real node, whose
      # crd-upgrader image carries the script and the chart's CRDs.
      if selected kai-chart; then
        t0="$(date +%s.%N)"
        kai_src="$(cd "${SCRIPT_DIR}/kai" && GOFLAGS=-mod=mod go mod download -json "${KAI_FLAGS[@]}" github.com/kai-scheduler/KAI-scheduler \
                   | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir",""))')" || kai_src=""
        if [[ "${SIM_BIN_FORCE:-0}" != 1 && -f "${SIM_BIN_DIR}/kai-chart/kai-scheduler/Chart.yaml"
              && "$(cat "${SIM_BIN_DIR}/kai-chart/source" 2>/dev/null)" == "github.com/kai-scheduler/KAI-scheduler ${KAI_VERSION}" ]]; then
          printf '%-24s cached  %6ss  (%s)\n' kai-chart "$(elapsed "${t0}" "$(date +%s.%N)")" "deployments/kai-scheduler of KAI ${KAI_VERSION}"
        elif [[ -f "${kai_src}/deployments/kai-scheduler/Chart.yaml" && -f "${kai_src}/deployments/crd-upgrader/apply-crds.sh" ]]; then
          rm -rf "${SIM_BIN_DIR}/kai-chart.tmp"
          mkdir -p "${SIM_BIN_DIR}/kai-chart.tmp"
          cp -r "${kai_src}/deployments/kai-scheduler" "${SIM_BIN_DIR}/kai-chart.tmp/kai-scheduler"
          cp "${kai_src}/deployments/crd-upgrader/apply-crds.sh" "${SIM_BIN_DIR}/kai-chart.tmp/apply-crds.sh"
          chmod -R u+w "${SIM_BIN_DIR}/kai-chart.tmp"
          chmod 0755 "${SIM_BIN_DIR}/kai-chart.tmp/apply-crds.sh"  # as KAI's crd-upgrader Dockerfile sets it
          echo "github.com/kai-scheduler/KAI-scheduler ${KAI_VERSION}" >"${SIM_BIN_DIR}/kai-chart.tmp/source"
          rm -rf "${SIM_BIN_DIR}/kai-chart"
          mv "${SIM_BIN_DIR}/kai-chart.tmp" "${SIM_BIN_DIR}/kai-chart"
          printf '%-24s copied  %6ss  (%s)\n' kai-chart "$(elapsed "${t0}" "$(date +%s.%N)")" "deployments/kai-scheduler of KAI ${KAI_VERSION}"
        else
          echo "build.sh: KAI's chart (deployments/kai-scheduler) not found in KAI's module (${kai_src:-not downloaded})" >&2
          FAILED+=(kai-chart)
        fi
      fi
      # run.ai's kwok-operator (its NodePools make the nodes of KAI's scale suite): its program, at the
      # version KAI's go.mod requires (KWOK_OPERATOR_VERSION, a tool of the kai wrapper), and its CRDs
      # read from its module.
      build_one kwok-operator "${SCRIPT_DIR}/kai" github.com/run-ai/kwok-operator/cmd \
        "gomod github.com/run-ai/kwok-operator ${KWOK_OPERATOR_VERSION:?versions.env sets no KWOK_OPERATOR_VERSION}" \
        "-s -w" "${KAI_FLAGS[@]}"
      selected kwok-operator && kwok_operator_crds
      # KAI's own e2e suites, only when asked (make kai-e2e): one Ginkgo test binary per suite.
      for suite in ${KAI_E2E_SUITES:-}; do
        [[ "${suite}" =~ ^[a-z0-9_]+(/[a-z0-9_.]+)*$ ]] || { echo "build.sh: KAI_E2E_SUITES: bad suite ${suite}" >&2; FAILED+=("kai-e2e/${suite}"); continue; }
        # A suite is named by its path under test/e2e/suites; the scale suite, test/e2e/scale, as "scale".
        pkg="github.com/kai-scheduler/KAI-scheduler/test/e2e/suites/${suite}"
        [[ "${suite}" == scale ]] && pkg="github.com/kai-scheduler/KAI-scheduler/test/e2e/scale"
        BUILD_TEST=1 build_one "kai-e2e/${suite//\//-}.test" "${SCRIPT_DIR}/kai" "${pkg}" \
          "gomod github.com/kai-scheduler/KAI-scheduler ${KAI_VERSION}" "-s -w" "${KAI_FLAGS[@]}"
      done
    else
      selected kai-crds && FAILED+=(kai-crds)
      selected kwok-operator && FAILED+=(kwok-operator)
      for p in "${KAI_PROGRAMS[@]}"; do selected "kai-${p}" && FAILED+=("kai-${p}"); done
    fi
  fi
fi

# --- the real node: containerd, runc, the CNI plugins, crictl, kubelet's pause, NVIDIA's device plugin --
# containerd v2 (its shim and ctr), runc (cgo with libseccomp: Debian's libseccomp-dev and
# pkg-config), the CNI plugins the node's bridge network uses, crictl: one wrapper module, node/.
# NVIDIA's k8s-device-plugin needs other Kubernetes API versions than cri-tools: its own,
# device-plugin/ (cgo: it loads NVML with dlopen). pause is Kubernetes' own pause.c from the
# k8s.io/kubernetes module, linked statically.
NODE_DIR="${SCRIPT_DIR}/node"
if selected containerd || selected containerd-shim-runc-v2 || selected ctr || selected runc \
   || selected crictl || selected cni/bridge || selected cni/host-local || selected cni/loopback; then
  if check_wrapper containerd "${NODE_DIR}" github.com/containerd/containerd/v2 "${CONTAINERD_VERSION}" \
     && check_wrapper runc "${NODE_DIR}" github.com/opencontainers/runc "${RUNC_VERSION}" \
     && check_wrapper cni "${NODE_DIR}" github.com/containernetworking/plugins "${CNI_PLUGINS_VERSION}" \
     && check_wrapper crictl "${NODE_DIR}" sigs.k8s.io/cri-tools "${CRI_TOOLS_VERSION}"; then
    CONTAINERD_LDFLAGS="-s -w -X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION}"
    for b in containerd containerd-shim-runc-v2 ctr; do
      build_one "${b}" "${NODE_DIR}" "github.com/containerd/containerd/v2/cmd/${b}" \
        "gomod github.com/containerd/containerd/v2 ${CONTAINERD_VERSION}" "${CONTAINERD_LDFLAGS}" -tags no_btrfs
    done
    if selected runc && ! pkg-config --exists libseccomp 2>/dev/null; then
      echo "build.sh: runc needs libseccomp's headers and pkg-config (Debian: apt-get install libseccomp-dev pkg-config)" >&2
      FAILED+=(runc)
    else
      BUILD_CGO=1 build_one runc "${NODE_DIR}" github.com/opencontainers/runc "runc version ${RUNC_VERSION#v}" \
        "-s -w -X main.version=${RUNC_VERSION#v}" -tags seccomp
    fi
    for p in main/bridge ipam/host-local main/loopback; do
      build_one "cni/${p#*/}" "${NODE_DIR}" "github.com/containernetworking/plugins/plugins/${p}" \
        "gomod github.com/containernetworking/plugins ${CNI_PLUGINS_VERSION}" \
        "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=${CNI_PLUGINS_VERSION}"
    done
    build_one crictl "${NODE_DIR}" sigs.k8s.io/cri-tools/cmd/crictl "crictl version ${CRI_TOOLS_VERSION}" \
      "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${CRI_TOOLS_VERSION}"
  else
    for b in containerd containerd-shim-runc-v2 ctr runc crictl cni/bridge cni/host-local cni/loopback; do
      selected "${b}" && FAILED+=("${b}")
    done
  fi
fi
if selected nvidia-device-plugin; then
  if check_wrapper nvidia-device-plugin "${SCRIPT_DIR}/device-plugin" github.com/NVIDIA/k8s-device-plugin "${DEVICE_PLUGIN_VERSION}"; then
    BUILD_CGO=1 build_one nvidia-device-plugin "${SCRIPT_DIR}/device-plugin" \
      github.com/NVIDIA/k8s-device-plugin/cmd/nvidia-device-plugin \
      "gomod github.com/NVIDIA/k8s-device-plugin ${DEVICE_PLUGIN_VERSION}" \
      "-s -w -X github.com/NVIDIA/k8s-device-plugin/internal/info.version=${DEVICE_PLUGIN_VERSION}"
  else
    FAILED+=(nvidia-device-plugin)
  fi
fi
if selected pause; then
  src="$(cd "${K8S_DIR}" && go mod download -json k8s.io/kubernetes 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Dir",""))')/build/pause/linux/pause.c"
  out="${SIM_BIN_DIR}/pause"
  t0="$(date +%s.%N)"
  if [[ ! -f "${src}" ]]; then
    echo "build.sh: pause.c not found in k8s.io/kubernetes@${K8S_VERSION}" >&2
    FAILED+=(pause)
  elif [[ "${SIM_BIN_FORCE:-0}" != 1 && -x "${out}" && "$(cat "${out}.source" 2>/dev/null)" == "k8s.io/kubernetes ${K8S_VERSION}" ]]; then
    printf '%-24s cached  %6ss  (%s)\n' pause "$(elapsed "${t0}" "$(date +%s.%N)")" "k8s.io/kubernetes ${K8S_VERSION}"
  elif "${CC:-gcc}" -static -O2 -Wall -DVERSION="${K8S_VERSION}" -o "${out}.tmp" "${src}" >"${LOG_DIR}/pause.log" 2>&1; then
    mv -f "${out}.tmp" "${out}"
    echo "k8s.io/kubernetes ${K8S_VERSION}" >"${out}.source"
    printf '%-24s built   %6ss  (%s)\n' pause "$(elapsed "${t0}" "$(date +%s.%N)")" "k8s.io/kubernetes ${K8S_VERSION}"
  else
    echo "build.sh: building pause failed:" >&2
    cat "${LOG_DIR}/pause.log" >&2
    rm -f "${out}.tmp"
    FAILED+=(pause)
  fi
fi

# --- CoreDNS, the DNS of kind's node image (kubeadm's coredns/coredns image) -----------------------
if selected coredns; then
  [[ -n "${COREDNS_VERSION:-}" ]] || die "COREDNS_VERSION is not set in versions.env"
  if check_wrapper coredns "${SCRIPT_DIR}/coredns" github.com/coredns/coredns "${COREDNS_VERSION}"; then
    build_one coredns "${SCRIPT_DIR}/coredns" github.com/coredns/coredns \
      "gomod github.com/coredns/coredns ${COREDNS_VERSION}" "-s -w"
  else
    FAILED+=(coredns)
  fi
fi

# --- the NVML stand-in library (ours, C) ------------------------------------------
# libnvidia-ml.so.1 with one device, for the sim's "library_stand_in" boundary mode (KAI's
# reservation app loads it). Rebuilt when its source changes.
if selected nvml-stand-in; then
  src="${ROLES_DIR}/nvml_mock/files/nvml_stand_in.c"
  out="${SIM_BIN_DIR}/nvml-stand-in/libnvidia-ml.so.1"
  want="$(sha256sum "${src}" | cut -d' ' -f1)"
  t0="$(date +%s.%N)"
  if [[ "${SIM_BIN_FORCE:-0}" != 1 && -f "${out}" && "$(cat "${out}.source-sha256" 2>/dev/null)" == "${want}" ]]; then
    printf '%-24s cached  %6ss  (%s)\n' nvml-stand-in "$(elapsed "${t0}" "$(date +%s.%N)")" "source ${want:0:12}"
  elif ! command -v "${CC:-gcc}" >/dev/null 2>&1; then
    echo "build.sh: nvml-stand-in needs a C compiler (${CC:-gcc}) and none was found" >&2
    FAILED+=(nvml-stand-in)
  else
    mkdir -p "$(dirname "${out}")"
    if "${CC:-gcc}" -shared -fPIC -O2 -Wall -Wextra -Werror -Wl,-soname,libnvidia-ml.so.1 \
         -o "${out}.tmp" "${src}" -ldl >"${LOG_DIR}/nvml-stand-in.log" 2>&1; then
      mv -f "${out}.tmp" "${out}"
      echo "${want}" >"${out}.source-sha256"
      printf '%-24s built   %6ss  (%s)\n' nvml-stand-in "$(elapsed "${t0}" "$(date +%s.%N)")" "source ${want:0:12}"
    else
      echo "build.sh: building nvml-stand-in failed:" >&2
      cat "${LOG_DIR}/nvml-stand-in.log" >&2
      rm -f "${out}.tmp"
      FAILED+=(nvml-stand-in)
    fi
  fi
fi

if [[ ${#FAILED[@]} -gt 0 ]]; then
  echo "build.sh: FAILED: ${FAILED[*]} (logs in ${LOG_DIR})" >&2
  echo "${SIM_BIN_DIR}"
  exit 1
fi
echo "${SIM_BIN_DIR}"
