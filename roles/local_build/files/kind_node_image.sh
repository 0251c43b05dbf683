#!/usr/bin/env bash
# Assemble a kind node image without a registry: the files `kind create cluster --image` needs, from
# a Debian rootfs (debootstrap, from the distribution's mirror), kind's base-image files read from
# kind's Go module at the pinned version (never copied into the collection), the programs build.sh
# builds (kubelet, kubeadm, kubectl, containerd, runc, crictl, the CNI plugins), and kubeadm's images
# (kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy, etcd, CoreDNS, pause) written
# from those programs as OCI archives and preloaded into the image's containerd under the names
# kubeadm asks for. The versions are the collection's table's (versions.env); the result is cached by
# them and rebuilt when one changes.
#
# What differs from kind's own node image, and why:
#  - Debian's distribution (KIND_NODE_DEBIAN_SUITE) rather than kind's base image, plus dbus and python3 (the
#    kind_cluster role's stand-in for NVIDIA's container runtime is a Python program);
#  - containerd's sandbox image is the pause kubeadm names (kind's config names another tag);
#  - systemd-sysctl is masked, and the entrypoint is files/kind_node/sysctl-guard, which runs kind's
#    own entrypoint after keeping the node's writes to the host's global sysctls (systemd's fs.file-max,
#    the kubelet's kernel.panic, vm.overcommit_memory, ...) inside the node;
#  - a CNI bridge on the node's pod range (files/kind_node/10-gpulab-bridge.conflist) instead of
#    kindnetd (the cluster is made with networking.disableDefaultCNI);
#  - kube-proxy's image carries Debian's iptables (legacy and nft) and files/kind_node/iptables-wrapper,
#    which picks the mode the node uses, as kubernetes-sigs' iptables-wrappers do.
#
# Usage:
#   kind_node_image.sh           build what is missing; print the image's name and its archive on the last lines
#   kind_node_image.sh --print   print them without building (the name says the inputs it is built from)
#
# Needs root (debootstrap, chroot, a temporary containerd that unpacks the images), debootstrap, jq,
# and the programs of build.sh in its bin dir (SIM_BIN_DIR, as build.sh names it). Output:
# <cache root>/kind-node-<key>/rootfs.tar and image.json (name, entrypoint, stop signal, env),
# written atomically (an interrupted build leaves only a *.partial directory, removed by the next run).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FILES="${SCRIPT_DIR}/kind_node"
die() { echo "kind_node_image.sh: $*" >&2; exit 1; }

MODE=build
case "${1:-}" in
  "") ;;
  --print) MODE=print ;;
  -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument: $1 (see --help)" ;;
esac

# --- the table's versions, and build.sh's bin dir -----------------------------------------------------
VERSIONS_ENV="${SCRIPT_DIR}/../../../versions.env"
while IFS= read -r line || [[ -n "${line}" ]]; do
  [[ "${line}" =~ ^[[:space:]]*(#|$) ]] && continue
  [[ "${line}" =~ ^([A-Z][A-Z0-9_]*)=([^[:space:]]*)$ ]] || die "versions.env: bad line: ${line}"
  printf -v "${BASH_REMATCH[1]}" '%s' "${BASH_REMATCH[2]}"
done < "${VERSIONS_ENV}"
BIN="${SIM_BIN_DIR:-$("${SCRIPT_DIR}/build.sh" --print-bin-dir)}"
CACHE_ROOT="$(dirname "$(dirname "${BIN}")")"

# The image's key: every input that changes its content (versions, the programs' own versions as the
# table gives them, this script and the files it adds).
KEY_INPUTS="debian=${KIND_NODE_DEBIAN_SUITE} kind=${KIND_VERSION} k8s=${K8S_VERSION} etcd=${ETCD_VERSION}"
KEY_INPUTS+=" containerd=${CONTAINERD_VERSION} runc=${RUNC_VERSION} cni=${CNI_PLUGINS_VERSION} crictl=${CRI_TOOLS_VERSION}"
KEY_INPUTS+=" coredns=${COREDNS_VERSION} files=$(cat "${BASH_SOURCE[0]}" "${FILES}"/* | sha256sum | cut -c1-12)"
KEY="$(sha256sum <<<"${KEY_INPUTS}" | cut -c1-12)"
NAME="${LOCAL_IMAGE_REGISTRY}/kind-node:${K8S_VERSION}-${KEY}"
OUT="${CACHE_ROOT}/kind-node-${KEY}"
if [[ "${MODE}" == print || -f "${OUT}/image.json" ]]; then
  [[ "${MODE}" == print ]] || echo "kind-node cached (${KEY_INPUTS})" >&2
  echo "${NAME}"
  echo "${OUT}/rootfs.tar"
  exit 0
fi

# --- what the build needs ---------------------------------------------------------------------------
[[ "$(id -u)" == 0 ]] || die "assembling kind's node image needs root (debootstrap, chroot, a containerd that unpacks the images): run it as root"
for tool in debootstrap jq chroot; do
  command -v "${tool}" >/dev/null 2>&1 || die "${tool} is missing: apt-get install debootstrap jq (make kind-packages installs them)"
done
for program in kubelet kubeadm kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd coredns \
               containerd containerd-shim-runc-v2 ctr runc crictl cni/bridge cni/host-local cni/loopback pause; do
  [[ -x "${BIN}/${program}" ]] || die "${BIN}/${program} is missing: build it with ${SCRIPT_DIR}/build.sh"
done
KIND_DIR="$(cd / && GOTOOLCHAIN=local GOFLAGS='' go mod download -json "sigs.k8s.io/kind@${KIND_VERSION}" | jq -r .Dir)"
KIND_FILES="${KIND_DIR}/images/base/files"
[[ -f "${KIND_FILES}/usr/local/bin/entrypoint" ]] || die "kind's base-image files are not in sigs.k8s.io/kind@${KIND_VERSION} (${KIND_DIR})"

# kubeadm's images, as kubeadm names them for this Kubernetes; etcd is given the etcd build.sh builds
# (the cluster's kind config sets its tag), CoreDNS must be the table's.
mapfile -t KUBEADM_IMAGES < <("${BIN}/kubeadm" config images list --kubernetes-version "${K8S_VERSION}")
image_of() { printf '%s\n' "${KUBEADM_IMAGES[@]}" | grep -E "^registry\.k8s\.io/$1:" || die "kubeadm names no $1 image"; }
PAUSE_IMAGE="$(image_of pause)"
COREDNS_IMAGE="$(image_of coredns/coredns)"
[[ "${COREDNS_IMAGE##*:}" == "${COREDNS_VERSION}" ]] \
  || die "kubeadm ${K8S_VERSION} asks for ${COREDNS_IMAGE}, versions.env has COREDNS_VERSION=${COREDNS_VERSION}: make them agree"
ETCD_IMAGE="registry.k8s.io/etcd:${ETCD_VERSION#v}"

WORK="${OUT}.partial"
rm -rf "${WORK}" "${CACHE_ROOT}"/kind-node-*.partial
mkdir -p "${WORK}"
ROOTFS="${WORK}/rootfs"
T0="$(date +%s)"
step() { printf '%-28s %4ss\n' "$1" "$(( $(date +%s) - T0 ))"; }

# --- 1. Debian, with the packages kind's base image installs (its Dockerfile's clean-install list) -----
PACKAGES="$(awk '/clean-install \\$/{take=1; next} take && /^ *&&/{exit} take {gsub(/\\/, ""); print}' \
            "${KIND_DIR}/images/base/Dockerfile" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')"
[[ "${PACKAGES}" == *systemd* && "${PACKAGES}" == *iptables* ]] || die "could not read the package list of kind's images/base/Dockerfile"
# dbus for systemd; python3 for the collection's stand-in of NVIDIA's container runtime (kind_cluster_nvidia_runtime)
PACKAGES+=",dbus,python3"
BASE="${CACHE_ROOT}/kind-node-debian-${KIND_NODE_DEBIAN_SUITE}-$(sha256sum <<<"${PACKAGES}" | cut -c1-12)"
if [[ ! -f "${BASE}.tar" ]]; then
  rm -rf "${BASE}.partial"
  debootstrap --variant=minbase --include="${PACKAGES}" "${KIND_NODE_DEBIAN_SUITE}" "${BASE}.partial" "${KIND_NODE_DEBIAN_MIRROR}" \
    >"${WORK}/debootstrap.log" 2>&1 || { tail -n 20 "${WORK}/debootstrap.log" >&2; die "debootstrap failed (log: ${WORK}/debootstrap.log)"; }
  tar -C "${BASE}.partial" --numeric-owner -cf "${BASE}.tar.partial" .
  rm -rf "${BASE}.partial"
  mv "${BASE}.tar.partial" "${BASE}.tar"
  step "debootstrap ${KIND_NODE_DEBIAN_SUITE}"
fi
mkdir -p "${ROOTFS}"
tar -C "${ROOTFS}" --numeric-owner -xf "${BASE}.tar"
step "rootfs"

# --- 2. kind's base-image files, installed as images/base/Dockerfile copies them ------------------------
install -m 0755 "${KIND_FILES}"/usr/local/bin/* "${ROOTFS}/usr/local/bin/"
mkdir -p "${ROOTFS}/kind/bin" "${ROOTFS}/LICENSES" "${ROOTFS}/etc/containerd" "${ROOTFS}/etc/default" \
         "${ROOTFS}/etc/sysctl.d" "${ROOTFS}/etc/systemd/system/kubelet.service.d"
find "${KIND_FILES}/kind" -maxdepth 1 -type f -exec install -m 0644 {} "${ROOTFS}/kind/" \;
install -m 0755 "${KIND_FILES}"/kind/bin/* "${ROOTFS}/kind/bin/"
install -m 0644 "${KIND_FILES}"/LICENSES/* "${ROOTFS}/LICENSES/"
find "${KIND_FILES}/etc" -maxdepth 1 -type f -exec install -m 0644 {} "${ROOTFS}/etc/" \;
install -m 0644 "${KIND_FILES}"/etc/containerd/* "${ROOTFS}/etc/containerd/"
install -m 0644 "${KIND_FILES}"/etc/default/* "${ROOTFS}/etc/default/"
install -m 0644 "${KIND_FILES}"/etc/sysctl.d/* "${ROOTFS}/etc/sysctl.d/"
find "${KIND_FILES}/etc/systemd/system" -maxdepth 1 -type f -exec install -m 0644 {} "${ROOTFS}/etc/systemd/system/" \;
install -m 0644 "${KIND_FILES}"/etc/systemd/system/kubelet.service.d/* "${ROOTFS}/etc/systemd/system/kubelet.service.d/"
chmod 0755 "${ROOTFS}/kind" "${ROOTFS}/kind/bin"

# the Dockerfile's RUN steps
find "${ROOTFS}/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
rm -f "${ROOTFS}"/lib/systemd/system/multi-user.target.wants/* "${ROOTFS}"/etc/systemd/system/*.wants/* \
      "${ROOTFS}"/lib/systemd/system/local-fs.target.wants/* "${ROOTFS}"/lib/systemd/system/sockets.target.wants/*udev* \
      "${ROOTFS}"/lib/systemd/system/sockets.target.wants/*initctl* "${ROOTFS}"/lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >> "${ROOTFS}/etc/systemd/journald.conf"
ln -sf /usr/lib/systemd/systemd "${ROOTFS}/sbin/init"
systemctl --root="${ROOTFS}" enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
systemctl --root="${ROOTFS}" mask systemd-binfmt.service >/dev/null 2>&1
# Debian's sysctl.d (kernel.pid_max, fs.protected_*) would reach the host's global sysctls from a privileged node
systemctl --root="${ROOTFS}" mask systemd-sysctl.service >/dev/null 2>&1
mkdir -p "${ROOTFS}/etc/kubernetes/manifests"
rm -rf "${ROOTFS}"/var/lib/apt/lists/* "${ROOTFS}"/var/cache/apt/*.bin "${ROOTFS}"/var/cache/apt/archives/*.deb \
       "${ROOTFS}"/var/cache/debconf/*-old "${ROOTFS}"/var/log/* "${ROOTFS}"/tmp/* "${ROOTFS}"/var/tmp/*
: > "${ROOTFS}/etc/machine-id"

# --- 3. the node's programs ---------------------------------------------------------------------------
install -m 0755 "${BIN}/containerd" "${BIN}/ctr" "${BIN}/containerd-shim-runc-v2" "${BIN}/crictl" "${ROOTFS}/usr/local/bin/"
install -m 0755 "${BIN}/runc" "${ROOTFS}/usr/local/sbin/runc"
mkdir -p "${ROOTFS}/opt/cni/bin"
install -m 0755 "${BIN}/cni/bridge" "${BIN}/cni/host-local" "${BIN}/cni/loopback" "${ROOTFS}/opt/cni/bin/"
install -m 0755 "${BIN}/kubelet" "${BIN}/kubeadm" "${BIN}/kubectl" "${ROOTFS}/usr/bin/"
chroot "${ROOTFS}" /usr/local/sbin/runc --version >/dev/null || die "runc does not run in the rootfs (its libseccomp)"
# containerd's base runtime spec, made as kind's Dockerfile makes it (a createContainer hook, no rlimits)
chroot "${ROOTFS}" /usr/local/bin/ctr oci spec \
  | jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | jq 'del(.process.rlimits)' > "${ROOTFS}/etc/containerd/cri-base.json"
chmod 0644 "${ROOTFS}/etc/containerd/cri-base.json"
echo "${K8S_VERSION}" > "${ROOTFS}/kind/version"
# the sandbox image: the pause kubeadm names, which the image carries
sed -i -E "s#sandbox_image = \"[^\"]*\"#sandbox_image = \"${PAUSE_IMAGE}\"#" "${ROOTFS}/etc/containerd/config.toml"
grep -q "sandbox_image = \"${PAUSE_IMAGE}\"" "${ROOTFS}/etc/containerd/config.toml" \
  || die "kind's containerd config names no sandbox_image to set to ${PAUSE_IMAGE}"
mkdir -p "${ROOTFS}/etc/cni/net.d"
install -m 0644 "${FILES}/10-gpulab-bridge.conflist" "${ROOTFS}/etc/cni/net.d/"
install -m 0755 "${FILES}/sysctl-guard" "${ROOTFS}/usr/local/bin/gpulab-sysctl-guard"
step "kind's files, the programs"

# --- 4. kubeadm's images, written from the programs (one-layer OCI archives) ---------------------------
IMAGES="${WORK}/images"
mkdir -p "${IMAGES}"
OCI=(python3 "${SCRIPT_DIR}/oci_image.py")
# kube-proxy runs iptables-save/-restore: Debian's xtables (legacy and nft) of the rootfs, their libraries
# and extensions (loaded at run time: their libraries too), busybox as /bin/sh, and the wrapper
libraries_of() { chroot "${ROOTFS}" ldd "$@" | awk '/=> \//{print $3} /^\t\/lib64/{print $1}' | sort -u; }
EXTENSIONS="$(cd "${ROOTFS}" && find usr/lib/x86_64-linux-gnu/xtables -name '*.so' | sort | sed 's#^#/#')"
PROXY=(--file "${BIN}/kube-proxy:/usr/local/bin/kube-proxy" --file /bin/busybox:/bin/busybox --link bin/sh:busybox
       --file "${FILES}/iptables-wrapper:/usr/sbin/iptables-wrapper")
for program in /usr/sbin/xtables-legacy-multi /usr/sbin/xtables-nft-multi; do PROXY+=(--file "${ROOTFS}${program}:${program}"); done
# shellcheck disable=SC2086
for library in $(libraries_of /usr/sbin/xtables-legacy-multi /usr/sbin/xtables-nft-multi ${EXTENSIONS}) ${EXTENSIONS}; do
  source="$(readlink -f "${ROOTFS}${library}")"
  PROXY+=(--file "${source}:${library}")
done
for name in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
  PROXY+=(--link "usr/sbin/${name}:iptables-wrapper")
done
LABEL="org.opencontainers.image.source=built locally by gpulab.kai_hami from the Go modules of versions.env"
"${OCI[@]}" --name "registry.k8s.io/kube-apiserver:${K8S_VERSION}" --out "${IMAGES}/kube-apiserver.tar" --label "${LABEL}" \
  --file "${BIN}/kube-apiserver:/usr/local/bin/kube-apiserver" >/dev/null
"${OCI[@]}" --name "registry.k8s.io/kube-controller-manager:${K8S_VERSION}" --out "${IMAGES}/kube-controller-manager.tar" --label "${LABEL}" \
  --file "${BIN}/kube-controller-manager:/usr/local/bin/kube-controller-manager" >/dev/null
"${OCI[@]}" --name "registry.k8s.io/kube-scheduler:${K8S_VERSION}" --out "${IMAGES}/kube-scheduler.tar" --label "${LABEL}" \
  --file "${BIN}/kube-scheduler:/usr/local/bin/kube-scheduler" >/dev/null
"${OCI[@]}" --name "registry.k8s.io/kube-proxy:${K8S_VERSION}" --out "${IMAGES}/kube-proxy.tar" --label "${LABEL}" "${PROXY[@]}" >/dev/null
"${OCI[@]}" --name "${ETCD_IMAGE}" --out "${IMAGES}/etcd.tar" --label "${LABEL}" \
  --file "${BIN}/etcd:/usr/local/bin/etcd" --dir var/lib/etcd >/dev/null
"${OCI[@]}" --name "${COREDNS_IMAGE}" --out "${IMAGES}/coredns.tar" --label "${LABEL}" \
  --file "${BIN}/coredns:/coredns" --entrypoint /coredns >/dev/null
"${OCI[@]}" --name "${PAUSE_IMAGE}" --out "${IMAGES}/pause.tar" --label "${LABEL}" \
  --file "${BIN}/pause:/pause" --entrypoint /pause >/dev/null
step "kubeadm's images"

# --- 5. preloaded into the rootfs's containerd, by a containerd of its own on the host (its root in the
#        rootfs, its state in the work dir, its socket in a temporary directory; no CRI, no NRI), stopped again
PRELOAD="${WORK}/preload"
mkdir -p "${PRELOAD}/state" "${PRELOAD}/opt"
# its sockets in a short directory of their own (a Unix socket's path has at most 107 bytes)
SOCKETS="$(mktemp -d /tmp/gpulab-kind-preload.XXXXXX)"
cat > "${PRELOAD}/config.toml" <<EOF
version = 3
root = "${ROOTFS}/var/lib/containerd"
state = "${PRELOAD}/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime",
  "io.containerd.nri.v1.nri", "io.containerd.podsandbox.controller.v1.podsandbox",
  "io.containerd.sandbox.controller.v1.shim", "io.containerd.runtime.v2.task", "io.containerd.monitor.task.v1.cgroups"]
[grpc]
  address = "${SOCKETS}/containerd.sock"
[ttrpc]
  address = "${SOCKETS}/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${PRELOAD}/opt"
# the unpacked layers' blobs are discarded (as kind's own config does); collect them at once
[plugins."io.containerd.gc.v1.scheduler"]
  mutation_threshold = 1
EOF
"${BIN}/containerd" --config "${PRELOAD}/config.toml" >"${WORK}/preload-containerd.log" 2>&1 &
PRELOADER=$!
stop_preloader() { kill "${PRELOADER}" 2>/dev/null || true; wait "${PRELOADER}" 2>/dev/null || true; rm -rf "${SOCKETS}"; }
trap stop_preloader EXIT
for _ in $(seq 100); do [[ -S "${SOCKETS}/containerd.sock" ]] && break; sleep 0.1; done
[[ -S "${SOCKETS}/containerd.sock" ]] || die "the preloading containerd did not start (log: ${WORK}/preload-containerd.log)"
for archive in "${IMAGES}"/*.tar; do
  "${BIN}/ctr" --address "${SOCKETS}/containerd.sock" -n k8s.io images import --local --snapshotter overlayfs \
    --discard-unpacked-layers "${archive}" >/dev/null
done
CONTENT="${ROOTFS}/var/lib/containerd/io.containerd.content.v1.content"
for _ in $(seq 100); do (( $(du -sm "${CONTENT}" | cut -f1) < 5 )) && break; sleep 0.1; done
stop_preloader
trap - EXIT
rm -rf "${PRELOAD}/state" "${PRELOAD}/opt"
step "images preloaded"

# --- 6. the image: a rootfs archive and how to start it (the kind_cluster role imports it) --------------
tar -C "${ROOTFS}" --numeric-owner --xattrs -cf "${WORK}/rootfs.tar" .
rm -rf "${ROOTFS}" "${IMAGES}" "${PRELOAD}"
jq -n --arg name "${NAME}" --arg inputs "${KEY_INPUTS}" '{name: $name, inputs: $inputs,
  entrypoint: ["/usr/local/bin/gpulab-sysctl-guard", "/sbin/init"], stop_signal: "SIGRTMIN+3", env: ["container=docker"]}' \
  > "${WORK}/image.json"
mv "${WORK}" "${OUT}"
# an image of other inputs is not built again: its archive goes (an engine that imported it keeps its copy)
for other in "${CACHE_ROOT}"/kind-node-*/image.json; do
  [[ "$(dirname "${other}")" == "${OUT}" ]] || rm -rf "$(dirname "${other}")"
done
step "kind node image"
echo "${NAME}"
echo "${OUT}/rootfs.tar"
