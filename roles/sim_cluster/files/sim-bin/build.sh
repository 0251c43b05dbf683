#!/usr/bin/env bash
# Build the binaries of the offline Kubernetes control plane used by the simulator
# (kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kwok, kwokctl,
# kai-crds) from Go modules only, into a cache directory keyed by the versions
# pinned in roles/sim_cluster/files/sim-bin/versions.env.  Nothing prebuilt is ever downloaded: Go
# modules come from GOPROXY and are checked against the committed go.sum files
# (GOTOOLCHAIN=local, so no Go toolchain is downloaded either).
#
# Usage:
#   roles/sim_cluster/files/sim-bin/build.sh                 build what is missing, reuse the rest
#   roles/sim_cluster/files/sim-bin/build.sh --sync          after bumping versions.env: regenerate the
#                                          wrapper modules' go.mod/go.sum (then commit)
#   roles/sim_cluster/files/sim-bin/build.sh --print-bin-dir print the bin dir and exit
#
# Environment:
#   SIM_BIN_DIR    output dir (default $SIM_BIN_ROOT/<key>/bin)
#   SIM_BIN_ROOT   cache root (default ${XDG_CACHE_HOME:-~/.cache}/gpulab-kai-hami/sim-bin)
#   SIM_BIN_ONLY   build only these binaries (space/comma separated names)
#   SIM_BIN_SKIP   skip these binaries (space/comma separated names)
#   SIM_BIN_FORCE  1 = rebuild even if the cached binary reports the right version
#
# Output: one line per binary ("built"/"cached", seconds, peak RSS of the build),
# then the bin dir on the last line.  Exit status 1 if any binary failed.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VERSIONS_ENV="${SCRIPT_DIR}/versions.env"

die() { echo "build.sh: $*" >&2; exit 1; }

MODE=build
case "${1:-}" in
  "") ;;
  --sync) MODE=sync ;;
  --print-bin-dir) MODE=print ;;
  -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument: $1 (see --help)" ;;
esac

# --- pinned versions --------------------------------------------------------
[[ -f "${VERSIONS_ENV}" ]] || die "missing ${VERSIONS_ENV}"
while IFS= read -r line || [[ -n "${line}" ]]; do
  line="${line%%$'\r'}"
  [[ "${line}" =~ ^[[:space:]]*(#|$) ]] && continue
  [[ "${line}" =~ ^([A-Z][A-Z0-9_]*)=([^[:space:]]*)$ ]] || die "versions.env: bad line: ${line}"
  printf -v "${BASH_REMATCH[1]}" '%s' "${BASH_REMATCH[2]}"
done < "${VERSIONS_ENV}"
for v in K8S_VERSION ETCD_VERSION KWOK_VERSION KAI_VERSION; do
  [[ -n "${!v:-}" ]] || die "${v} is not set in versions.env"
  [[ "${!v}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+ ]] || die "${v}=${!v} is not a vX.Y.Z version"
done

CACHE_KEY="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_kai-${KAI_VERSION}"
SIM_BIN_ROOT="${SIM_BIN_ROOT:-${XDG_CACHE_HOME:-${HOME}/.cache}/gpulab-kai-hami/sim-bin}"
SIM_BIN_DIR="${SIM_BIN_DIR:-${SIM_BIN_ROOT}/${CACHE_KEY}/bin}"
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
  echo "sync kai  -> github.com/kai-scheduler/KAI-scheduler@${KAI_VERSION}" \
       "(keep kai/go.mod's replace lines in step with KAI's own go.mod)"
  kai_proxy="$(kai_local_proxy)"
  (cd "${SCRIPT_DIR}/kai" \
     && go mod edit -replace "github.com/kai-scheduler/KAI-scheduler@${KAI_VERSION}=${KAI_SOURCE_MODULE}@${KAI_VERSION}" \
     && GOPROXY="${kai_proxy}" go get "github.com/kai-scheduler/KAI-scheduler@${KAI_VERSION}" \
     && GOPROXY="${kai_proxy}" go mod tidy)
  echo "sync done: review and commit roles/sim_cluster/files/sim-bin/*/go.mod and go.sum"
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
# EXPECTED followed by a space and more (e.g. "kwok version v0.8.0 go1.26.8 (linux/amd64)")?
version_ok() {
  local out l
  [[ -x "$1" ]] || return 1
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
         "run: roles/sim_cluster/files/sim-bin/build.sh --sync" >&2
    return 1
  fi
  if [[ ! -s "${dir}/go.sum" ]]; then
    echo "build.sh: ${dir#"${SCRIPT_DIR}"/}/go.sum is missing; run: roles/sim_cluster/files/sim-bin/build.sh --sync" >&2
    return 1
  fi
}

# build_one NAME WRAPPER_DIR PACKAGE EXPECTED_VERSION_LINE LDFLAGS
build_one() {
  local name="$1" dir="$2" pkg="$3" expect="$4" ldflags="$5"
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
  local -a cmd=(go build -trimpath -ldflags "${ldflags}" -o "${tmp}" "${pkg}")
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
    echo "build.sh: ${name} built but '${name} --version' does not print '${expect}':" >&2
    timeout 20 "${tmp}" --version >&2 || true
    rm -f "${tmp}"
    FAILED+=("${name}")
    return 0
  fi
  mv -f "${tmp}" "${bin}"
  printf '%-24s built   %6ss  (%s)%s\n' "${name}" "${secs}" "${expect}" "${rss:+  peak RSS ${rss} MiB}"
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

K8S_BINS=(kube-apiserver kube-controller-manager kube-scheduler)
k8s_wanted=0
for b in "${K8S_BINS[@]}"; do selected "${b}" && k8s_wanted=1; done
if [[ "${k8s_wanted}" == 1 ]]; then
  if python3 "${SCRIPT_DIR}/gen-k8s-replaces.py" --check >/dev/null; then
    for b in "${K8S_BINS[@]}"; do
      build_one "${b}" "${K8S_DIR}" "k8s.io/kubernetes/cmd/${b}" "Kubernetes ${K8S_VERSION}" "${K8S_LDFLAGS}"
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
if selected kwok || selected kwokctl; then
  # KubeVersion is only kwokctl's default when nothing else says otherwise;
  # point it at our Kubernetes version as kwok's release builds do.
  KWOK_LDFLAGS="-s -w -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${K8S_VERSION#v}"
  if check_wrapper kwok "${SCRIPT_DIR}/kwok" sigs.k8s.io/kwok "${KWOK_VERSION}"; then
    build_one kwok "${SCRIPT_DIR}/kwok" sigs.k8s.io/kwok/cmd/kwok \
      "kwok version ${KWOK_VERSION}" "${KWOK_LDFLAGS}"
    build_one kwokctl "${SCRIPT_DIR}/kwok" sigs.k8s.io/kwok/cmd/kwokctl \
      "kwokctl version ${KWOK_VERSION}" "${KWOK_LDFLAGS}"
  else
    selected kwok && FAILED+=(kwok)
    selected kwokctl && FAILED+=(kwokctl)
  fi
fi

# --- KAI-scheduler ----------------------------------------------------------
if selected kai-crds; then
  kai_proxy="$(kai_local_proxy)"
  export GOPROXY="${kai_proxy}"
  if check_wrapper kai-crds "${SCRIPT_DIR}/kai" github.com/kai-scheduler/KAI-scheduler "${KAI_VERSION}"; then
    build_one kai-crds "${SCRIPT_DIR}/kai" ./cmd/kai-crds \
      "kai-crds github.com/kai-scheduler/KAI-scheduler ${KAI_VERSION}" "-s -w"
  else
    FAILED+=(kai-crds)
  fi
fi

if [[ ${#FAILED[@]} -gt 0 ]]; then
  echo "build.sh: FAILED: ${FAILED[*]} (logs in ${LOG_DIR})" >&2
  echo "${SIM_BIN_DIR}"
  exit 1
fi
echo "${SIM_BIN_DIR}"
