#!/usr/bin/env bash
# bench/tfb/callgrind_nginx.sh ROUTE [N1 N2]: user-space instructions per request of the nginx +
# ngx_lua peer (bench/tfb/nginx) for one TechEmpower route, counted by callgrind: the
# counterpart of bench/tfb/callgrind.sh for zever. nginx runs as one process (master_process
# off, 1 worker) on a fresh copy of bench/tfb/data.py's file; one client sends N requests one at
# a time on one keep-alive connection; the cost per request is the slope between runs of N1 and
# N2 requests (default 1000/5000), so start-up cancels out. KEEP=DIR: copy the callgrind files
# there (cg.N1, cg.N2), to compare functions per request with callgrind_annotate (as
# bench/tfb/callgrind.sh's KEEP). Needs the vendor nginx that
# bench/tfb/run.sh fetches (bench/http/vendor).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
ROUTE=${1:?usage: callgrind_nginx.sh ROUTE [N1 N2]}
N1=${2:-1000}
N2=${3:-5000}
die() { echo "bench/tfb/callgrind_nginx.sh: $1" >&2; exit 1; }
# vroot, nginx_bin (the vendor nginx), free_port, get_n (the client) and cg_total, shared with
# bench/http/callgrind_hello.sh.
# shellcheck source=bench/http/lib.sh
. "$root/bench/http/lib.sh"
ld_path=$vlib
[[ -x $nginx_bin ]] || { echo "no vendor nginx: run bash bench/tfb/quick.sh once" >&2; exit 1; }
count() { # count N -> instructions
  local run port user="" vg
  run=$(mktemp -d /tmp/zever-tfb-ngx-cg.XXXXXX)
  mkdir -p "$run/nginx"
  python3 bench/tfb/data.py "$run/tfb.db" >/dev/null
  port=$(free_port)
  ((EUID == 0)) && user="user root;"
  sed -e "s|@VENDOR@|$vroot|g; s|@RUN@|$run/nginx|g; s|@PORT@|$port|g" \
    -e "s|@USER@|$user|g; s|@HERE@|$root/bench/tfb/nginx|g; s|@WORKERS@|1|g; s|@DB@|$run/tfb.db|g" \
    -e "s|^master_process on;|master_process off;|" bench/tfb/nginx/nginx.conf.in >"$run/nginx/nginx.conf"
  LD_LIBRARY_PATH=$ld_path valgrind --tool=callgrind --callgrind-out-file="$run/cg" "$nginx_bin" \
    -p "$run/nginx" -c "$run/nginx/nginx.conf" -e "$run/nginx/error.log" </dev/null >"$run/out" 2>&1 &
  vg=$!
  until curl -sf "http://127.0.0.1:$port/plaintext" >/dev/null 2>&1; do sleep 0.3; done
  get_n "$port" "$1" "$ROUTE"
  kill -QUIT "$vg"
  wait "$vg" || true
  cg_total "$run/cg"
  [[ -n ${KEEP:-} ]] && cp "$run/cg" "$KEEP/cg.$1"
  rm -rf "$run"
}
a=$(count "$N1")
b=$(count "$N2")
echo "nginx $ROUTE Ir($N1)=$a Ir($N2)=$b Ir/request=$(((b - a) / (N2 - N1)))"
