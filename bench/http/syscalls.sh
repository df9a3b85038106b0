#!/usr/bin/env bash
# bench/http/syscalls.sh: what each server asks of the kernel per /hello request (load-independent
# counts, not times): system calls by name, context switches and the bytes of one response, for
# `bin/zever serve examples/hello --workers 1` and the nginx + ngx_lua peer of run.sh (its vendor
# nginx, 1 worker), under two clients:
#
#   seq  one keep-alive connection, one request at a time (Python's http.client), N requests
#   wrk  wrk -t1 -c64 for a few seconds (many connections: epoll_wait returns several events)
#
# `strace -c -f -p PID` (every thread of zever; nginx's worker) counts the calls while the client
# runs; the script divides by the requests the client completed. strace slows the servers down,
# which changes how many events one epoll_wait returns under wrk (so the wrk rows are indicative);
# the seq rows do not depend on speed.
#
# Environment: N (seq requests, default 2000), SECONDS_WRK (default 3), ROUTE (default /hello),
# SERVERS (default "zever nginx"), BIN (default bin/zever).
# It stops only what it started, by PID.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
run=$(mktemp -d /tmp/zever-syscalls.XXXXXX)
die() { echo "bench/http/syscalls: $1" >&2; exit "${2:-1}"; }
note() { echo "# $*"; }
# shellcheck source=bench/http/lib.sh
. "$root/bench/http/lib.sh"

n=${N:-2000}
secs=${SECONDS_WRK:-3}
route=${ROUTE:-/hello}
servers=${SERVERS:-zever nginx}
bin=${BIN:-bin/zever}
command -v strace >/dev/null || die "strace is not installed"

srv_pid="" st_pid=""
cleanup() {
  [[ -n $st_pid ]] && kill -INT "$st_pid" 2>/dev/null && wait "$st_pid" 2>/dev/null
  stop "$srv_pid"
  rm -rf "$run"
}
trap cleanup EXIT

start() { # start SERVER: sets srv_pid, port, traced (the PID strace attaches to)
  port=$(free_port)
  if [[ $1 == zever ]]; then
    "$bin" serve examples/hello --listen "127.0.0.1:$port" --workers 1 --access-log off \
      --drain 1 </dev/null >"$run/zever.out" 2>&1 &
    srv_pid=$!
    wait_ready "$srv_pid" "http://127.0.0.1:$port$route" || die "zever did not start"
    traced=$srv_pid
  else
    vendor_setup
    local user=""
    ((EUID == 0)) && user="user root;"
    sed -e "s|@VENDOR@|$vroot|g; s|@RUN@|$run|g; s|@PORT@|$port|g; s|@USER@|$user|g" \
      "$root/bench/http/nginx.conf.in" >"$run/nginx.conf"
    LD_LIBRARY_PATH=$ld_path "$nginx_bin" -p "$run" -c "$run/nginx.conf" -e "$run/error.log" \
      </dev/null >"$run/nginx.out" 2>&1 &
    srv_pid=$!
    wait_ready "$srv_pid" "http://127.0.0.1:$port$route" || die "nginx did not start"
    traced=$(nginx_worker_pids "$srv_pid")
  fi
}

ctxsw() { # ctxsw PID: voluntary + involuntary context switches of every thread of PID
  cat /proc/"$1"/task/*/status | awk '/ctxt_switches/ {s += $2} END {print s}'
}

seq_client() { # the keep-alive client of lib.sh, then the count it made
  get_n "$port" "$n" "$route" && echo "$n"
}

wrk_client() {
  wrk -t1 -c64 -d"${secs}s" "http://127.0.0.1:$port$route" >"$run/wrk.out"
  grep -q Non-2xx "$run/wrk.out" && die "non-2xx answers under wrk"
  awk '/ requests in / {print $1}' "$run/wrk.out"
}

wire_bytes() { # the bytes of one response, head and body, as the server sent them
  /usr/bin/python3 - "$port" "$route" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET " + sys.argv[2].encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
n = 0
while True:
    b = s.recv(65536)
    if not b:
        break
    n += len(b)
print(n)
PY
}

for s in $servers; do
  start "$s"
  note "$s: pid $srv_pid, traced $traced, one response $(wire_bytes) bytes (Connection: close)"
  for client in seq wrk; do
    # Context switches without strace (its stops would add their own), then the traced run.
    c0=$(ctxsw "$traced")
    reqs=$("${client}_client")
    c1=$(ctxsw "$traced")
    cs=$(awk -v a="$c0" -v b="$c1" -v r="$reqs" 'BEGIN {printf "%.3f", (b - a) / r}')
    strace -c -f -p "$traced" -o "$run/strace.$s.$client" 2>/dev/null &
    st_pid=$!
    sleep 0.5 # strace attaches: nothing is synchronised on it (the counts are divided anyway)
    reqs=$("${client}_client")
    kill -INT "$st_pid"
    wait "$st_pid" 2>/dev/null || true
    st_pid=""
    echo "== $s $client: $reqs requests traced; context switches/request (untraced run): $cs"
    # strace -c rows: % time, seconds, usecs/call, calls, [errors], name; the last is "total".
    awk -v r="$reqs" '$1 ~ /^[0-9.]+$/ && NF >= 5 {
        printf "   %-16s %8.3f /request\n", $NF, $4 / r }' "$run/strace.$s.$client"
  done
  stop "$srv_pid"
  srv_pid=""
done
