#!/bin/sh
# Import OCI archives into the node's containerd (k8s.io namespace), one ctr call after the other,
# now or in the background, the latter with its state in a directory of the node's own (not
# Ansible's async directory, which follows the user's home).
#
#   import_images.sh run CTR SOCKET ARCHIVE...               import them now; stop at the first
#                                                            containerd refuses, naming it
#   import_images.sh start STATE_DIR CTR SOCKET ARCHIVE...   wait for an import still running from
#                                                            an earlier run, then start this one
#                                                            detached and return
#   import_images.sh wait STATE_DIR TIMEOUT                  wait until it ends; print its log;
#                                                            exit 1 when it failed, was stopped, or
#                                                            did not end in TIMEOUT seconds
# Files in STATE_DIR: import.pid (the importing shell), import.log, import.rc (written at the end).
set -u
mode="$1"; shift
if [ "$mode" = run ]; then
  ctr="$1"; address="$2"; shift 2
  for archive in "$@"; do
    "$ctr" --address "$address" --namespace k8s.io images import --snapshotter=overlayfs --digests "$archive" \
      || { echo "containerd did not import $archive" >&2; exit 1; }
  done
  exit 0
fi
dir="$1"; shift
pid_file="$dir/import.pid"; log="$dir/import.log"; rc_file="$dir/import.rc"

running() { [ -f "$pid_file" ] && [ ! -f "$rc_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null; }

case "$mode" in
  start)
    mkdir -p "$dir"
    while running; do sleep 0.2; done
    rm -f "$rc_file" "$log"
    (
      sh "$0" run "$@"
      echo $? > "$rc_file.tmp"; mv "$rc_file.tmp" "$rc_file"
    ) > "$log" 2>&1 < /dev/null &
    echo $! > "$pid_file"
    ;;
  wait)
    timeout="$1"; waited=0
    [ -f "$pid_file" ] || { echo "no import was started in $dir"; exit 1; }
    while [ ! -f "$rc_file" ]; do
      if ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
        sleep 0.2
        [ -f "$rc_file" ] && break
        cat "$log" 2>/dev/null; echo "the import (pid $(cat "$pid_file")) was stopped before it ended"; exit 1
      fi
      [ "$waited" -ge "$((timeout * 5))" ] && { cat "$log"; echo "the import did not end in $timeout s"; exit 1; }
      sleep 0.2; waited=$((waited + 1))
    done
    cat "$log"
    [ "$(cat "$rc_file")" = 0 ]
    ;;
  *) echo "import_images.sh: unknown mode $mode (run, start, wait)" >&2; exit 2 ;;
esac
