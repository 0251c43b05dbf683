# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpulab.kai_hami contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a kind cluster through podman changes on the host, recorded before and put back after.

    host_state.py record FILE         the host before the first cluster (a file that exists is kept)
    host_state.py created FILE        after a create: the values the create left (put back only while
                                      they are still those)
    host_state.py restore FILE        after the last cluster is gone: put back what the clusters changed
                                      and nobody else changed since, then remove FILE

podman's network backend (netavark) turns on IP forwarding and adds firewall chains (NETAVARK_*) it
does not remove with the network; podman leaves its parent cgroups (libpod_parent), /run/netns and its
own paths; kind mounts /lib/modules, which the collection creates where it is missing. The node's
writes to the kernel's global sysctls stay in the node (the node image's sysctl guard); they are
recorded too, so that one that leaks is put back. Each step prints one JSON line: what it changed.
"""

from __future__ import absolute_import, division, print_function

import glob
import json
import os
import shlex
import subprocess
import sys

# The kernel's global sysctls a kind node (systemd, the kubelet) or podman's netavark may write.
SYSCTLS = [
    "fs/file-max", "fs/nr_open", "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "kernel/pid_max", "fs/protected_fifos",
    "fs/protected_hardlinks", "fs/protected_regular", "fs/protected_symlinks",
    "net/ipv4/ip_forward", "net/ipv4/conf/all/forwarding", "net/ipv4/conf/default/forwarding",
    "net/ipv4/conf/all/accept_redirects", "net/ipv6/conf/all/forwarding", "net/ipv6/conf/default/forwarding",
]
# Paths podman, netavark, runc and kind may make on the host (a directory made since the record goes,
# when empty of anything but what they made).
PATHS = ["/lib/modules", "/run/netns", "/run/containers", "/run/libpod", "/run/runc", "/var/lib/containers"]
CGROUP_ROOT = "/sys/fs/cgroup"
NETAVARK = "NETAVARK"


def read_sysctls(proc_sys="/proc/sys"):
    found = {}
    for key in SYSCTLS:
        try:
            with open(os.path.join(proc_sys, key)) as handle:
                found[key] = handle.read().strip()
        except (IOError, OSError):
            pass
    return found


def libpod_cgroups():
    return sorted(path for path in glob.glob(os.path.join(CGROUP_ROOT, "*", "libpod_parent*")) + glob.glob(
        os.path.join(CGROUP_ROOT, "*", "libpod_parent", "*")) if os.path.isdir(path))


def run(argv):
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout


def legacy_tables():
    """The legacy x_tables that exist (asking for one would make it exist: never ask for a missing one)."""
    found = set()
    for family, names in (("iptables", "/proc/net/ip_tables_names"), ("ip6tables", "/proc/net/ip6_tables_names")):
        try:
            with open(names) as handle:
                found.update((family, table.strip()) for table in handle if table.strip())
        except (IOError, OSError):
            pass
    return found


def netavark_chains():
    """{(command, table): [chain, ...]} of NETAVARK chains, in iptables' nft and legacy backends."""
    chains = {}
    legacy = legacy_tables()
    for family in ("iptables", "ip6tables"):
        for backend in ("nft", "legacy"):
            command = "%s-%s" % (family, backend)
            for table in ("filter", "nat", "mangle"):
                if backend == "legacy" and (family, table) not in legacy:
                    continue
                code, out = run([command + "-save", "-t", table])
                if code == 0:
                    names = [line[1:].split()[0] for line in out.splitlines() if line.startswith(":" + NETAVARK)]
                    if names:
                        chains[(command, table)] = names
    return chains


def nft_objects():
    """The nftables tables and chains, as ["<family> <table>", ...] and ["<family> <table> <chain>", ...]."""
    code, out = run(["nft", "-j", "list", "ruleset"])
    tables, chains = [], []
    if code != 0:
        return tables, chains
    for item in json.loads(out or "{}").get("nftables", []):
        if "table" in item:
            tables.append("%s %s" % (item["table"]["family"], item["table"]["name"]))
        elif "chain" in item:
            chains.append("%s %s %s" % (item["chain"]["family"], item["chain"]["table"], item["chain"]["name"]))
    return sorted(tables), sorted(chains)


def snapshot():
    tables, chains = nft_objects()
    return dict(sysctls=read_sysctls(), paths=[p for p in PATHS if os.path.exists(p)], cgroups=libpod_cgroups(),
                netavark=sorted("%s %s %s" % (c, t, name) for (c, t), names in netavark_chains().items() for name in names),
                nft_tables=tables, nft_chains=chains)


def record(path):
    if os.path.exists(path):
        return dict(changed=False, msg="kept the record of %s (a cluster of the collection already runs)" % path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    state = dict(before=snapshot())
    with open(path + ".tmp", "w") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
    os.rename(path + ".tmp", path)
    return dict(changed=True, msg="recorded the host in %s" % path)


def created(path):
    with open(path) as handle:
        state = json.load(handle)
    state["after_create"] = read_sysctls()
    with open(path + ".tmp", "w") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
    os.rename(path + ".tmp", path)
    changed = sorted(k for k, v in state["after_create"].items() if state["before"]["sysctls"].get(k) != v)
    return dict(changed=False, sysctls_changed=changed)


def delete_netavark_chains(before):
    """Delete NETAVARK chains made since the record, with the built-in chains' jumps to them, where
    nothing but theirs remains in them; a chain that holds another network's rules stays."""
    done = []
    legacy = legacy_tables()
    for (command, table), names in sorted(netavark_chains().items()):
        mine = [name for name in names if "%s %s %s" % (command, table, name) not in before]
        if not mine or (command.endswith("legacy") and (command.split("-")[0], table) not in legacy):
            continue
        code, out = run([command + "-save", "-t", table])
        rules = [line for line in out.splitlines() if line.startswith("-A ")]
        # a chain of ours whose rules all jump to, or belong to, chains of ours is ours alone
        ours = set(mine)
        foreign = [rule for rule in rules if shlex.split(rule)[1] in ours
                   and not any(("-j %s" % name) in rule or ("-g %s" % name) in rule for name in ours)
                   and "netavark" not in rule.lower()]
        if foreign:
            continue
        for rule in rules:
            words = shlex.split(rule)
            if words[1] not in ours and any(rule.endswith("-j %s" % name) or (" -j %s " % name) in rule for name in ours):
                if run([command, "-t", table, "-D"] + words[1:])[0] == 0:
                    done.append("%s -t %s -D %s" % (command, table, rule[3:]))
        for name in mine:
            run([command, "-t", table, "-F", name])
        for name in mine:
            if run([command, "-t", table, "-X", name])[0] == 0:
                done.append("%s -t %s -X %s" % (command, table, name))
    return done


def delete_empty_nft(before_tables, before_chains):
    """Delete the nftables chains and tables made since the record that are empty now."""
    done = []
    code, out = run(["nft", "-j", "list", "ruleset"])
    if code != 0:
        return done
    items = json.loads(out or "{}").get("nftables", [])
    rules = {}
    for item in items:
        if "rule" in item:
            key = "%s %s %s" % (item["rule"]["family"], item["rule"]["table"], item["rule"]["chain"])
            rules[key] = rules.get(key, 0) + 1
    tables, chains = nft_objects()
    for chain in chains:
        if chain not in before_chains and not rules.get(chain):
            if run(["nft", "delete", "chain"] + chain.split())[0] == 0:
                done.append("nft delete chain " + chain)
    tables, chains = nft_objects()
    for table in tables:
        if table not in before_tables and not [c for c in chains if c.startswith(table + " ")]:
            if run(["nft", "delete", "table"] + table.split())[0] == 0:
                done.append("nft delete table " + table)
    return done


def restore(path, proc_sys="/proc/sys"):
    if not os.path.exists(path):
        return dict(changed=False, msg="no record of the host at %s: nothing to put back" % path)
    with open(path) as handle:
        state = json.load(handle)
    before, after = state["before"], state.get("after_create", {})
    done = []
    now = read_sysctls(proc_sys)
    for key, value in sorted(before["sysctls"].items()):
        # put back a value the clusters changed, only while it is still what they left
        if now.get(key) != value and (key not in after or now.get(key) == after[key]):
            with open(os.path.join(proc_sys, key), "w") as handle:
                handle.write(value + "\n")
            done.append("%s %s -> %s" % (key.replace("/", "."), now.get(key), value))
    done += delete_netavark_chains(set(before["netavark"]))
    done += delete_empty_nft(set(before["nft_tables"]), set(before["nft_chains"]))
    for cgroup in sorted(libpod_cgroups(), key=len, reverse=True):
        if cgroup not in before["cgroups"]:
            try:
                os.rmdir(cgroup)
                done.append("rmdir " + cgroup)
            except OSError:
                pass
    if "/run/netns" not in before["paths"] and os.path.isdir("/run/netns") and not os.listdir("/run/netns"):
        if run(["mountpoint", "-q", "/run/netns"])[0] == 0:
            run(["umount", "/run/netns"])
        try:
            os.rmdir("/run/netns")
            done.append("rmdir /run/netns")
        except OSError:
            pass
    for made in ("/lib/modules", "/run/containers", "/run/libpod", "/run/runc", "/var/lib/containers"):
        if made not in before["paths"] and os.path.exists(made):
            leftover = [f for d, _dirs, files in os.walk(made) for f in files if not f.endswith((".boltdb", ".db", ".lock", ".json"))]
            if not leftover:
                subprocess.run(["rm", "-rf", made], check=False)
                done.append("rm -rf " + made)
    os.remove(path)
    return dict(changed=bool(done), done=done)


def main(argv):
    if len(argv) != 2 or argv[0] not in ("record", "created", "restore"):
        sys.stderr.write(__doc__)
        return 2
    print(json.dumps(dict(record=record, created=created, restore=restore)[argv[0]](argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
