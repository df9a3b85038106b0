#!/usr/bin/env bash
# bench/http/run.sh: zever against nginx + ngx_lua, side by side, in one run.
#
# Serves the same two routes from `bin/zever serve examples/hello` (1 worker thread) and from
# Debian's nginx 1.22 + ngx_lua running OpenResty's LuaJIT (1 worker process, config in
# nginx.conf.in), then alternates wrk runs against them:
#
#   for each round: nginx /hello, zever /hello, nginx /users/42, zever /users/42
#                   (each: a 1 s warm-up, then `wrk -t1 -c64 -d<S>s --latency`)
#
# and prints, per (server, route), the medians of req/s, p99 latency and server CPU time per
# request (utime+stime from /proc/<pid>/stat, read just before and after the measured run, over
# the requests wrk completed; utime alone is printed beside it as the user-space part), then the
# zever/nginx ratios against the targets: req/s >= 1.0x,
# CPU/request <= 0.8x, p99 <= 1.0x.
#
# Environment: BENCH_HTTP_SECONDS (default 5, at most 10), BENCH_HTTP_ROUNDS (default 3),
# BENCH_HTTP_CONNECTIONS (default 64), BENCH_HTTP_SERVERS (default "nginx zever"),
# BENCH_HTTP_PIN=1 (pin the servers to CPU 1 and wrk to CPU 0 with taskset).
#
# nginx is never installed: its .debs are fetched with `apt-get download` into
# bench/http/vendor/debs (ignored by git) and unpacked with `dpkg-deb -x` into
# bench/http/vendor/root, because OpenResty's LuaJIT (libluajit2-5.1-2) conflicts with the
# libluajit-5.1-dev that zever builds against. nginx runs with LD_LIBRARY_PATH at the vendor
# lib folder, and the script checks /proc/<pid>/maps that OpenResty's LuaJIT is the one loaded.
#
# It must not kill anything it did not start: it stops its own servers by PID on exit, and
# identifies nginx's worker by parent PID and executable path.
#
# Exit status: 0 when every selected server was measured (targets missed or met), 1 when a server
# could not be started or answered wrongly, 2 on bad settings.

# shellcheck disable=SC2317  # functions reached through trap and "start_$s"
set -euo pipefail

cd "$(dirname "$0")/../.."
root=$PWD
here=$root/bench/http

seconds=${BENCH_HTTP_SECONDS:-5}
rounds=${BENCH_HTTP_ROUNDS:-3}
conns=${BENCH_HTTP_CONNECTIONS:-64}
servers=${BENCH_HTTP_SERVERS:-nginx zever}
pin=${BENCH_HTTP_PIN:-0}

die() { echo "bench/http: $1" >&2; exit "${2:-1}"; }
note() { echo "# $*"; }

if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1 || seconds > 10)); then
  die "BENCH_HTTP_SECONDS wants 1..10, got \"$seconds\"" 2
fi
if ! [[ $rounds =~ ^[0-9]+$ ]] || ((rounds < 1)); then die "BENCH_HTTP_ROUNDS wants >= 1" 2; fi
if ! [[ $conns =~ ^[0-9]+$ ]] || ((conns < 1)); then die "BENCH_HTTP_CONNECTIONS wants >= 1" 2; fi
for s in $servers; do
  [[ $s == nginx || $s == zever ]] || die "BENCH_HTTP_SERVERS: unknown server \"$s\"" 2
done
command -v wrk >/dev/null || die "wrk is not installed (apt-get install wrk)"
command -v curl >/dev/null || die "curl is not installed (apt-get install curl)"
command -v python3 >/dev/null || die "python3 is not installed"

wrk_cpu=() srv_cpu=()
if [[ $pin == 1 ]]; then
  command -v taskset >/dev/null || die "BENCH_HTTP_PIN=1 needs taskset (util-linux)"
  wrk_cpu=(taskset -c 0) srv_cpu=(taskset -c 1)
fi

# --- cleanup: only the PIDs this script started ---------------------------------------------
run=$(mktemp -d /tmp/zever-bench-http.XXXXXX)
nginx_pid="" nginx_workers="" zever_pid=""
# shellcheck source=bench/http/lib.sh
. "$here/lib.sh"

cleanup() {
  local w
  stop "$zever_pid"
  stop "$nginx_pid"
  # A worker orphaned by a killed master: still ours if it runs the vendor binary.
  for w in $nginx_workers; do
    [[ $(readlink /proc/"$w"/exe 2>/dev/null) == "$nginx_bin" ]] && kill -KILL "$w" 2>/dev/null
  done
  rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# --- vendor: nginx, ngx_lua, OpenResty's LuaJIT, lua-resty-core, lua-cjson (lib.sh) --------
vendor_setup

clk_tck=$(getconf CLK_TCK)
results=$run/results.tsv
: >"$results"
declare -A port=() pids=()
failed=0

# --- start nginx -----------------------------------------------------------------------------
start_nginx() {
  local user=""
  ((EUID == 0)) && user="user root;" # workers stay root: they read the vendor tree and run dir
  port[nginx]=$(free_port)
  sed -e "s|@VENDOR@|$vroot|g; s|@RUN@|$run|g; s|@PORT@|${port[nginx]}|g; s|@USER@|$user|g" \
    "$here/nginx.conf.in" >"$run/nginx.conf"
  LD_LIBRARY_PATH=$ld_path "${srv_cpu[@]}" "$nginx_bin" -p "$run" -c "$run/nginx.conf" \
    -e "$run/error.log" </dev/null >"$run/nginx.out" 2>&1 &
  nginx_pid=$!
  if ! wait_ready "$nginx_pid" "http://127.0.0.1:${port[nginx]}/hello"; then
    cat "$run/nginx.out" "$run/error.log" >&2 2>/dev/null || true
    echo "bench/http: nginx did not start" >&2
    return 1
  fi
  nginx_workers=$(nginx_worker_pids "$nginx_pid")
  if [[ $(wc -w <<<"$nginx_workers") != 1 ]]; then
    echo "bench/http: want 1 nginx worker, got: $nginx_workers" >&2
    return 1
  fi
  local lj
  lj=$(awk '/libluajit/ {print $6; exit}' /proc/"$nginx_workers"/maps)
  if [[ $lj != "$vroot/"* ]]; then
    echo "bench/http: nginx loaded $lj, not OpenResty's LuaJIT from the vendor folder" >&2
    return 1
  fi
  local version
  version=$("$nginx_bin" -v 2>&1 | sed 's/^nginx version: nginx\///')
  note "nginx $version + ngx_lua: master $nginx_pid, worker $nginx_workers," \
    "port ${port[nginx]}, LuaJIT $lj"
  # The master only forks and waits; it is counted too, so nothing is hidden in it.
  pids[nginx]="$nginx_pid $nginx_workers"
}

# --- start zever -----------------------------------------------------------------------------
start_zever() {
  [[ -x bin/zever ]] || { echo "bench/http: bin/zever is not built (run make)" >&2; return 1; }
  port[zever]=$(free_port)
  "${srv_cpu[@]}" bin/zever serve examples/hello --listen "127.0.0.1:${port[zever]}" --workers 1 \
    --access-log off --drain 1 </dev/null >"$run/zever.out" 2>&1 &
  zever_pid=$!
  if ! wait_ready "$zever_pid" "http://127.0.0.1:${port[zever]}/hello"; then
    sed -n 1,20p "$run/zever.out" >&2
    echo "bench/http: zever serve did not answer 200 on /hello" >&2
    return 1
  fi
  local lj threads
  lj=$(awk '/libluajit/ {print $6; exit}' /proc/"$zever_pid"/maps)
  threads=$(find /proc/"$zever_pid"/task -mindepth 1 -maxdepth 1 | wc -l)
  note "zever serve: pid $zever_pid ($threads threads, all counted), port ${port[zever]}," \
    "LuaJIT $lj"
  pids[zever]=$zever_pid
}

active=()
for s in $servers; do
  if "start_$s"; then active+=("$s"); else failed=1; fi
done
((${#active[@]} > 0)) || die "no server to measure"

# --- same responses on both sides ------------------------------------------------------------
routes=(/hello /users/42)
for r in "${routes[@]}"; do
  ref=""
  for s in "${active[@]}"; do
    body=$run/body.$s
    curl -s -D "$run/headers" -o "$body" "http://127.0.0.1:${port[$s]}$r"
    code=$(awk 'NR == 1 {print $2}' "$run/headers")
    type=$(tr -d '\r' <"$run/headers" | awk -F': ' 'tolower($1) == "content-type" {print $2}')
    wire=$(($(wc -c <"$run/headers") + $(wc -c <"$body")))
    note "$s GET $r -> $code, $type, body '$(cat "$body")' ($wire bytes on the wire)"
    [[ $code == 200 ]] || { echo "bench/http: $s answered $code on $r" >&2; exit 1; }
    if [[ -z $ref ]]; then ref=$body
    elif ! cmp -s "$ref" "$body"; then
      echo "bench/http: the bodies differ on $r: '$(cat "$ref")' vs '$(cat "$body")'" >&2
      exit 1
    fi
  done
done

# --- the runs --------------------------------------------------------------------------------
# user_ticks PID...: utime alone (field 14 of /proc/<pid>/stat), summed: the user-space share of
# cpu_ticks (the rest, stime, is the kernel's work for the server: mostly the socket calls).
user_ticks() {
  local total=0 pid line rest f
  for pid in "$@"; do
    line=$(cat /proc/"$pid"/stat) || die "process $pid is gone"
    rest=${line##*) }
    read -r -a f <<<"$rest"
    total=$((total + f[11]))
  done
  echo "$total"
}

# measure SERVER ROUTE ROUND: warm-up, then one wrk run; appends a row to $results.
measure() {
  local s=$1 r=$2 n=$3 url="http://127.0.0.1:${port[$1]}$2" before after out rps p99 reqs
  local ubefore uafter
  local p
  "${wrk_cpu[@]}" wrk -t1 -c"$conns" -d1s "$url" >/dev/null
  # shellcheck disable=SC2086
  before=$(cpu_ticks ${pids[$s]})
  # shellcheck disable=SC2086
  ubefore=$(user_ticks ${pids[$s]})
  out=$("${wrk_cpu[@]}" wrk -t1 -c"$conns" -d"${seconds}s" --latency "$url")
  # shellcheck disable=SC2086
  after=$(cpu_ticks ${pids[$s]})
  # shellcheck disable=SC2086
  uafter=$(user_ticks ${pids[$s]})
  for p in ${pids[$s]}; do alive "$p" || die "$s (pid $p) died during the run"; done
  if grep -q 'Non-2xx' <<<"$out"; then
    echo "$out" >&2
    die "$s answered non-2xx responses on $r"
  fi
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  reqs=$(awk '/ requests in / {print $1}' <<<"$out")
  p99=$(awk '$1 == "99%" {
    v = $2; u = v; sub(/^[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
    if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000
    printf "%.3f", v }' <<<"$out")
  if [[ -z $rps || -z $reqs || -z $p99 || $reqs -eq 0 ]]; then
    echo "$out" >&2
    die "cannot parse wrk output"
  fi
  local errs
  errs=$(awk '/Socket errors:/ {sub(/^ *Socket errors: */, ""); print}' <<<"$out")
  local cpu_us user_us
  cpu_us=$(awk -v t=$((after - before)) -v hz="$clk_tck" -v n="$reqs" \
    'BEGIN {printf "%.2f", t / hz / n * 1e6}')
  user_us=$(awk -v t=$((uafter - ubefore)) -v hz="$clk_tck" -v n="$reqs" \
    'BEGIN {printf "%.2f", t / hz / n * 1e6}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$r" "$n" "$rps" "$p99" "$cpu_us" "$reqs" \
    "$user_us" >>"$results"
  # Server CPU over the run in % of one core: near 100 the server is the limit, below it wrk is.
  local busy=$(((after - before) * 100 / (clk_tck * seconds)))
  printf 'round %d  %-5s %-9s %10.0f req/s  p99 %7.2f ms  %6.2f µs CPU/req (user %.2f)  ' \
    "$n" "$s" "$r" "$rps" "$p99" "$cpu_us" "$user_us"
  printf '(%d requests, server %d%% of a core%s)\n' "$reqs" "$busy" \
    "${errs:+, socket errors: $errs}"
}

pinned=""
[[ $pin == 1 ]] && pinned=", servers on CPU 1, wrk on CPU 0"
note "wrk -t1 -c$conns -d${seconds}s --latency, 1 s warm-up each, $rounds rounds," \
  "CLK_TCK $clk_tck$pinned"
# The machine may be shared: other work on it makes req/s noisy, so say how busy it was.
read -r load _ </proc/loadavg
noisy=$(awk -v l="$load" 'BEGIN {if (l > 1) print " (busy: expect noise)"}')
note "load average before the runs: $load on $(nproc) CPUs$noisy"
for ((n = 1; n <= rounds; n++)); do
  for r in "${routes[@]}"; do
    for s in "${active[@]}"; do measure "$s" "$r" "$n"; done
  done
done

# --- summary ---------------------------------------------------------------------------------
echo
python3 - "$results" <<'PY'
import statistics, sys
rows = {}  # (server, route) -> {round: (req/s, p99 ms, CPU us/req)}
routes = []
for line in open(sys.argv[1]):
    s, r, n, rps, p99, cpu, reqs, user = line.rstrip("\n").split("\t")
    rows.setdefault((s, r), {})[int(n)] = (float(rps), float(p99), float(cpu), float(user))
    if r not in routes:
        routes.append(r)
med = {k: [statistics.median(x[i] for x in v.values()) for i in range(4)] for k, v in rows.items()}
print("medians of %d runs" % max(len(v) for v in rows.values()))
print("%-10s %-6s %12s %10s %14s %15s" % ("route", "server", "req/s", "p99 ms", "CPU µs/req",
                                         "of it user µs"))
for r in routes:
    for s in ("nginx", "zever"):
        if (s, r) in med:
            m = med[(s, r)]
            print("%-10s %-6s %12.0f %10.2f %14.2f %15.2f" % (r, s, m[0], m[1], m[2], m[3]))
if any(s == "zever" for s, _ in med) and any(s == "nginx" for s, _ in med):
    targets = [("req/s", 0, lambda x: x >= 1.0, ">= 1.00"),
               ("CPU/req", 2, lambda x: x <= 0.8, "<= 0.80"),
               ("p99", 1, lambda x: x <= 1.0, "<= 1.00")]
    print()
    print("zever/nginx: ratio of the medians (target), then the ratio in each round (same round, "
          "back to back)")
    for r in routes:
        z, g = rows.get(("zever", r)), rows.get(("nginx", r))
        if not z or not g:
            continue
        for name, i, ok, want in targets:
            ratio = med[("zever", r)][i] / med[("nginx", r)][i]
            rounds = " ".join("%.2f" % (z[n][i] / g[n][i]) for n in sorted(z) if n in g)
            print("%-10s %-8s %5.2fx  %-6s (target %s)  rounds: %s" % (
                r, name, ratio, "met" if ok(ratio) else "MISSED", want, rounds))
PY
exit "$failed"
