#!/usr/bin/env bash
# bench/http/static.sh: app:static against nginx's own static file serving, side by side.
#
# Serves the same folder (a 1 KiB and a 1 MiB file) from `bin/zever serve` (an app with one
# app:static mount, 1 worker thread) and from Debian's nginx (/usr/sbin/nginx, nginx-light:
# plain static serving, sendfile on, tcp_nopush on, 1 worker process, access log off), then
# alternates wrk runs against them:
#
#   for each round: nginx 1k, zever 1k, nginx 1m, zever 1m
#                   (each: a 1 s warm-up, then `wrk -t1 -c<C> -d<S>s --latency`)
#
# and prints, per (server, file), the medians of req/s, p99 latency and server CPU time per
# request (utime+stime of every process of the server, from /proc/<pid>/stat, over the requests
# wrk completed), then the zever/nginx ratios against the target: req/s >= 0.9x.
#
# Environment: BENCH_HTTP_SECONDS (default 5), BENCH_HTTP_ROUNDS (default 3),
# BENCH_HTTP_CONNECTIONS (default 64), BENCH_HTTP_PIN=1 (servers on CPU 1, wrk on CPU 0).
#
# It must not kill anything it did not start: its servers are stopped by PID on exit.
set -euo pipefail

cd "$(dirname "$0")/../.."
root=$PWD
seconds=${BENCH_HTTP_SECONDS:-5}
rounds=${BENCH_HTTP_ROUNDS:-3}
conns=${BENCH_HTTP_CONNECTIONS:-64}
pin=${BENCH_HTTP_PIN:-0}

die() { echo "bench/http/static: $1" >&2; exit 1; }
note() { echo "# $*"; }
# alive, stop, free_port, cpu_ticks, wait_ready, median; sys_nginx (Debian's nginx).
# shellcheck source=bench/http/lib.sh
. "$root/bench/http/lib.sh"
nginx_bin=$sys_nginx
[[ -x $nginx_bin ]] || die "nginx is not installed (make deps installs nginx-light)"
[[ -x bin/zever ]] || die "bin/zever is not built (run make)"
command -v wrk >/dev/null || die "wrk is not installed"

wrk_cpu=() srv_cpu=()
if [[ $pin == 1 ]]; then wrk_cpu=(taskset -c 0) srv_cpu=(taskset -c 1); fi

run=$(mktemp -d /tmp/zever-bench-static.XXXXXX)
nginx_pid="" zever_pid=""
cleanup() { stop "$zever_pid"; stop "$nginx_pid"; rm -rf "$run"; }
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# --- the files -------------------------------------------------------------------------------
mkdir -p "$run/public" "$run/app"
python3 -c 'import base64, os, sys
for name, n in (("f1k.txt", 1024), ("f1m.txt", 1048576)):
    open(sys.argv[1] + "/" + name, "wb").write(base64.encodebytes(os.urandom(n))[:n])' "$run/public"
cat >"$run/app/app.lua" <<LUA
local app = require("zever").app()
app:static("/", "$run/public", { precompressed = false })
return app
LUA

# --- nginx -------------------------------------------------------------------------------------
nport=$(free_port)
user=""
((EUID == 0)) && user="user root;"
mkdir -p "$run/nginx"
cat >"$run/nginx/nginx.conf" <<CONF
$user
daemon off;
master_process on;
worker_processes 1;
pid $run/nginx/nginx.pid;
error_log $run/nginx/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  types { text/plain txt; }
  client_body_temp_path $run/nginx/body;
  proxy_temp_path $run/nginx/proxy;
  fastcgi_temp_path $run/nginx/fastcgi;
  uwsgi_temp_path $run/nginx/uwsgi;
  scgi_temp_path $run/nginx/scgi;
  server {
    listen 127.0.0.1:$nport;
    root $run/public;
  }
}
CONF
"${srv_cpu[@]}" "$nginx_bin" -p "$run/nginx" -c "$run/nginx/nginx.conf" -e "$run/nginx/error.log" \
  </dev/null >"$run/nginx.out" 2>&1 &
nginx_pid=$!
wait_ready "$nginx_pid" "http://127.0.0.1:$nport/f1k.txt" || { cat "$run/nginx.out" >&2; die "nginx did not start"; }
nginx_pids="$nginx_pid $(cat /proc/"$nginx_pid"/task/*/children)"
echo "# nginx $("$nginx_bin" -v 2>&1 | sed 's/^nginx version: //'): pids $nginx_pids, port $nport"

# --- zever ---------------------------------------------------------------------------------------
zport=$(free_port)
"${srv_cpu[@]}" bin/zever serve "$run/app/app.lua" --listen "127.0.0.1:$zport" --workers 1 \
  --access-log off --drain 1 </dev/null >"$run/zever.out" 2>&1 &
zever_pid=$!
wait_ready "$zever_pid" "http://127.0.0.1:$zport/f1k.txt" || { cat "$run/zever.out" >&2; die "zever did not start"; }
echo "# zever serve: pid $zever_pid, port $zport"

declare -A port=([nginx]=$nport [zever]=$zport) pids=([nginx]=$nginx_pids [zever]=$zever_pid)
for f in f1k.txt f1m.txt; do
  for s in nginx zever; do
    curl -s -o "$run/got.$s" "http://127.0.0.1:${port[$s]}/$f"
    cmp -s "$run/got.$s" "$run/public/$f" || die "$s served a different $f"
  done
done

clk=$(getconf CLK_TCK)
results=$run/results.tsv
: >"$results"
measure() { # measure SERVER FILE
  local s=$1 f=$2 url="http://127.0.0.1:${port[$1]}/$2" before after out rps reqs p99
  "${wrk_cpu[@]}" wrk -t1 -c"$conns" -d1s "$url" >/dev/null
  # shellcheck disable=SC2086
  before=$(cpu_ticks ${pids[$s]})
  out=$("${wrk_cpu[@]}" wrk -t1 -c"$conns" -d"${seconds}s" --latency "$url")
  # shellcheck disable=SC2086
  after=$(cpu_ticks ${pids[$s]})
  grep -q 'Non-2xx\|Socket errors' <<<"$out" && { echo "$out" >&2; die "$s: errors on $f"; }
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  reqs=$(awk '/ requests in / {print $1}' <<<"$out")
  p99=$(awk '$1 == "99%" { v = $2; u = v; sub(/^[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
    if (u == "us") v /= 1000; else if (u == "s") v *= 1000; printf "%.3f", v }' <<<"$out")
  printf '%s\t%s\t%s\t%s\t%s\n' "$s" "$f" "$rps" "$p99" \
    "$(awk -v t=$((after - before)) -v c="$clk" -v n="$reqs" 'BEGIN { printf "%.2f", t / c / n * 1e6 }')" \
    >>"$results"
  printf '  %-6s %-8s %10s req/s  p99 %8s ms  cpu %s us/req\n' "$s" "$f" "$rps" "$p99" \
    "$(tail -1 "$results" | cut -f5)"
}
for ((r = 1; r <= rounds; r++)); do
  echo "# round $r"
  for f in f1k.txt f1m.txt; do
    measure nginx "$f"
    measure zever "$f"
  done
done

echo "# medians of $rounds rounds (wrk -t1 -c$conns -d${seconds}s)"
for f in f1k.txt f1m.txt; do
  declare -A m=()
  for s in nginx zever; do
    m[$s.rps]=$(awk -v s="$s" -v f="$f" '$1 == s && $2 == f {print $3}' "$results" | median)
    m[$s.p99]=$(awk -v s="$s" -v f="$f" '$1 == s && $2 == f {print $4}' "$results" | median)
    m[$s.cpu]=$(awk -v s="$s" -v f="$f" '$1 == s && $2 == f {print $5}' "$results" | median)
    printf '%-6s %-8s %10.0f req/s  p99 %8.3f ms  cpu %7.2f us/req\n' "$s" "$f" \
      "${m[$s.rps]}" "${m[$s.p99]}" "${m[$s.cpu]}"
  done
  awk -v z="${m[zever.rps]}" -v n="${m[nginx.rps]}" -v zc="${m[zever.cpu]}" \
    -v nc="${m[nginx.cpu]}" -v f="$f" 'BEGIN {
      r = z / n; printf "ratio  %-8s req/s %.2fx (target >= 0.90x: %s)  cpu/req %.2fx\n", f, r,
      (r >= 0.9 ? "met" : "missed"), zc / nc }'
  unset m
done
