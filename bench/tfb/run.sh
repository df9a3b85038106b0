#!/usr/bin/env bash
# bench/tfb/run.sh: the six TechEmpower test types on zever (bench/tfb/app) and on nginx +
# ngx_lua (bench/tfb/nginx: libsqlite3 through LuaJIT's FFI), side by side, in one run.
#
# For each worker count (BENCH_TFB_WORKERS, default "1 2"): writes the TFB data (data.py: World
# 10,000 rows, Fortune 12) once and gives each server its own copy, starts both servers with
# that many workers, checks both against the TFB rules (check.py; a failure stops the run), then
# alternates wrk runs:
#
#   for each round: for each test: nginx, zever   (each: a 1 s warm-up, then
#                   `wrk -t<workers> -c<conns> -d<S>s`; plaintext pipelined 16 as TFB does)
#
# and prints one table: per test and worker count, the medians of req/s and of the servers' CPU
# time per request (utime+stime of every process of the server from /proc, over the requests
# wrk completed), the zever/nginx ratios against issue #24's targets (req/s >= 1.0x; CPU/request
# <= 0.8x on plaintext, json, db and <= 1.0x on queries, updates, fortunes) and the ratio in
# each round. The load average is printed before each worker count: the machine may be shared;
# the size of each server's WAL file after its runs is printed too.
#
# Environment: BENCH_TFB_SECONDS (default 5, 1..10), BENCH_TFB_ROUNDS (default 3),
# BENCH_TFB_CONNECTIONS (default 64), BENCH_TFB_WORKERS (default "1 2"), BENCH_TFB_TESTS
# (default "plaintext json db queries updates fortunes"), BENCH_TFB_QUERIES (the count for
# queries and updates, default 20).
#
# BENCH_TFB_COUNT=1: count instead of time (load-independent, for a shared machine): each
# measured wrk run goes under `perf stat` attached to every process (and thread) of the server,
# with every syscalls:sys_enter_* tracepoint plus context-switches, cpu-migrations and
# page-faults; the table is then, per test and worker count, each event per request on both
# servers side by side (events under 0.01 a request on both left out) with the CPU time per
# request of the same run. Needs perf with tracepoints (perf_event_paranoid <= 1 or root).
#
# BENCH_TFB_ZEVER_PROCESSES=1: zever runs as WORKERS processes of one worker each (bench/tfb/
# procs.py hands each its own SO_REUSEPORT socket through socket activation), the process model
# of nginx's workers, instead of WORKERS threads of one process.
#
# The vendor nginx comes from bench/http/lib.sh (unpacked .debs, never installed). It stops only
# the processes it started, by PID. Exit status: 0 when everything was measured (targets met or
# missed), 1 when a server did not start or broke a TFB rule, 2 on bad settings.

# shellcheck disable=SC2317  # functions reached through trap
set -euo pipefail

cd "$(dirname "$0")/../.."
root=$PWD
here=$root/bench/tfb

seconds=${BENCH_TFB_SECONDS:-5}
rounds=${BENCH_TFB_ROUNDS:-3}
conns=${BENCH_TFB_CONNECTIONS:-64}
workers_list=${BENCH_TFB_WORKERS:-1 2}
tests=${BENCH_TFB_TESTS:-plaintext json db queries updates fortunes}
queries=${BENCH_TFB_QUERIES:-20}
count=${BENCH_TFB_COUNT:-0}
processes=${BENCH_TFB_ZEVER_PROCESSES:-0}

die() { echo "bench/tfb: $1" >&2; exit "${2:-1}"; }
note() { echo "# $*"; }

if ! [[ $seconds =~ ^[0-9]+$ ]] || ((seconds < 1 || seconds > 10)); then
  die "BENCH_TFB_SECONDS wants 1..10, got \"$seconds\"" 2
fi
if ! [[ $rounds =~ ^[0-9]+$ ]] || ((rounds < 1)); then die "BENCH_TFB_ROUNDS wants >= 1" 2; fi
if ! [[ $conns =~ ^[0-9]+$ ]] || ((conns < 1)); then die "BENCH_TFB_CONNECTIONS wants >= 1" 2; fi
if ! [[ $queries =~ ^[0-9]+$ ]] || ((queries < 1 || queries > 500)); then
  die "BENCH_TFB_QUERIES wants 1..500" 2
fi
for w in $workers_list; do
  if ! [[ $w =~ ^[0-9]+$ ]] || ((w < 1)); then die "BENCH_TFB_WORKERS: \"$w\" is not a count" 2; fi
done
for t in $tests; do
  case $t in plaintext | json | db | queries | updates | fortunes) ;;
    *) die "BENCH_TFB_TESTS: unknown test \"$t\"" 2 ;;
  esac
done
[[ $count == 0 || $count == 1 ]] || die "BENCH_TFB_COUNT wants 0 or 1" 2
[[ $processes == 0 || $processes == 1 ]] || die "BENCH_TFB_ZEVER_PROCESSES wants 0 or 1" 2
needed="wrk curl python3"
((count)) && needed="$needed perf"
for c in $needed; do command -v "$c" >/dev/null || die "$c is not installed"; done
[[ -x bin/zever ]] || die "bin/zever is not built (run make)"

run=$(mktemp -d /tmp/zever-bench-tfb.XXXXXX)
nginx_pid="" nginx_workers="" zever_pid=""
# shellcheck source=bench/http/lib.sh
. "$root/bench/http/lib.sh"

cleanup() {
  local w
  stop "$zever_pid"
  stop "$nginx_pid"
  if ((processes)) && [[ -s $run/zever.pids ]]; then # a child procs.py could not stop
    while read -r w; do
      if [[ $(readlink /proc/"$w"/exe 2>/dev/null) == "$root/bin/zever" ]]; then
        kill -KILL "$w" 2>/dev/null || true
      fi
    done <"$run/zever.pids"
  fi
  for w in $nginx_workers; do
    [[ $(readlink /proc/"$w"/exe 2>/dev/null) == "$nginx_bin" ]] && kill -KILL "$w" 2>/dev/null
  done
  rm -rf "$run"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

vendor_setup

clk_tck=$(getconf CLK_TCK)
results=$run/results.tsv counts=$run/counts.tsv
: >"$results"
: >"$counts"
declare -A port=() pids=()

start_nginx() { # start_nginx WORKERS DBFILE
  local user=""
  ((EUID == 0)) && user="user root;"
  port[nginx]=$(free_port)
  mkdir -p "$run/nginx"
  sed -e "s|@VENDOR@|$vroot|g; s|@RUN@|$run/nginx|g; s|@PORT@|${port[nginx]}|g" \
    -e "s|@USER@|$user|g; s|@HERE@|$here/nginx|g; s|@WORKERS@|$1|g; s|@DB@|$2|g" \
    "$here/nginx/nginx.conf.in" >"$run/nginx/nginx.conf"
  LD_LIBRARY_PATH=$ld_path "$nginx_bin" -p "$run/nginx" -c "$run/nginx/nginx.conf" \
    -e "$run/nginx/error.log" </dev/null >"$run/nginx/out" 2>&1 &
  nginx_pid=$!
  if ! wait_ready "$nginx_pid" "http://127.0.0.1:${port[nginx]}/plaintext"; then
    cat "$run/nginx/out" "$run/nginx/error.log" >&2 2>/dev/null || true
    die "nginx did not start"
  fi
  local i
  for ((i = 0; i < 50; i++)); do # the workers fork after the master answers... wait for all
    nginx_workers=$(nginx_worker_pids "$nginx_pid")
    [[ $(wc -w <<<"$nginx_workers") == "$1" ]] && break
    sleep 0.1
  done
  [[ $(wc -w <<<"$nginx_workers") == "$1" ]] || die "want $1 nginx workers, got: $nginx_workers"
  pids[nginx]="$nginx_pid $nginx_workers"
  note "nginx $("$nginx_bin" -v 2>&1 | sed 's/^nginx version: nginx\///') + ngx_lua:" \
    "master $nginx_pid, workers $nginx_workers, port ${port[nginx]}"
}

start_zever() { # start_zever WORKERS DBFILE
  port[zever]=$(free_port)
  if ((processes)); then # WORKERS processes of one worker each (procs.py: SO_REUSEPORT sockets)
    rm -f "$run/zever.pids"
    /usr/bin/python3 "$here/procs.py" "$1" 127.0.0.1 "${port[zever]}" "$run/zever.pids" -- \
      env DB_DSN="sqlite:$2" bin/zever serve "$here/app" --listen "127.0.0.1:${port[zever]}" \
      --workers 1 --access-log off --drain 1 </dev/null >"$run/zever.out" 2>&1 &
  else
    DB_DSN="sqlite:$2" bin/zever serve "$here/app" --listen "127.0.0.1:${port[zever]}" \
      --workers "$1" --access-log off --drain 1 </dev/null >"$run/zever.out" 2>&1 &
  fi
  zever_pid=$!
  if ! wait_ready "$zever_pid" "http://127.0.0.1:${port[zever]}/plaintext"; then
    sed -n 1,20p "$run/zever.out" >&2
    die "zever serve did not answer 200 on /plaintext"
  fi
  if ((processes)); then
    pids[zever]=$(tr '\n' ' ' <"$run/zever.pids")
    note "zever serve: $1 processes of 1 worker (pids ${pids[zever]}), port ${port[zever]}"
  else
    pids[zever]=$zever_pid
    note "zever serve: pid $zever_pid, $1 workers, port ${port[zever]}"
  fi
}

stop_servers() {
  stop "$zever_pid"
  stop "$nginx_pid"
  zever_pid="" nginx_pid="" nginx_workers=""
}

path_of() {
  case $1 in
    queries | updates) echo "/$1?queries=$queries" ;;
    *) echo "/$1" ;;
  esac
}

# The events of BENCH_TFB_COUNT=1: every system call (raw_syscalls:sys_enter) and, one by one, the
# ones a server could make per request ("other" in the table is the rest). An explicit list: perf
# stat given all 700 syscalls:* tracepoints at once silently reported some of them as 0 here
# (newfstatat, SQLite's fstat of the database, 20 a /queries request).
count_events=raw_syscalls:sys_enter
for e in read write readv writev recvfrom sendto recvmsg sendmsg epoll_wait epoll_pwait epoll_ctl \
  fcntl newfstatat newfstat pread64 pwrite64 fdatasync fsync futex clock_gettime gettimeofday \
  mmap munmap madvise brk mprotect accept4 close setsockopt getsockopt ioctl openat lseek \
  ftruncate clock_nanosleep nanosleep sched_yield getpid gettid rt_sigprocmask unlink; do
  count_events=$count_events,syscalls:sys_enter_$e
done

# cpu_split PID...: "utime stime" (clock ticks) summed over the processes (all their threads).
cpu_split() {
  local u=0 k=0 pid line rest f
  for pid in "$@"; do
    line=$(cat /proc/"$pid"/stat) || die "process $pid is gone"
    rest=${line##*) }
    read -r -a f <<<"$rest"
    u=$((u + f[11])) k=$((k + f[12]))
  done
  echo "$u $k"
}

# measure SERVER TEST WORKERS ROUND: warm-up, one wrk run, a row in $results.
measure() {
  local s=$1 t=$2 w=$3 n=$4 url before after out rps reqs cpu_us p split_before split_after
  url="http://127.0.0.1:${port[$s]}$(path_of "$t")"
  local script=()
  [[ $t == plaintext ]] && script=(-s "$here/pipeline.lua")
  local extra=()
  [[ $t == plaintext ]] && extra=(-- 16)
  wrk -t"$w" -c"$conns" -d1s "${script[@]}" "$url" "${extra[@]}" >/dev/null
  # shellcheck disable=SC2086
  before=$(cpu_ticks ${pids[$s]})
  # shellcheck disable=SC2086
  ((count)) && split_before=$(cpu_split ${pids[$s]})
  local perf=() list
  # shellcheck disable=SC2086
  list=$(printf '%s,' ${pids[$s]})
  ((count)) && perf=(perf stat -x ',' -o "$run/perf.out" -e "$count_events"
    -e "task-clock,context-switches,cpu-migrations,page-faults" -p "${list%,}" --)
  out=$("${perf[@]}" wrk -t"$w" -c"$conns" -d"${seconds}s" "${script[@]}" "$url" "${extra[@]}")
  # shellcheck disable=SC2086
  after=$(cpu_ticks ${pids[$s]})
  # shellcheck disable=SC2086
  ((count)) && split_after=$(cpu_split ${pids[$s]})
  for p in ${pids[$s]}; do alive "$p" || die "$s (pid $p) died during the run"; done
  if grep -q 'Non-2xx' <<<"$out"; then
    echo "$out" >&2
    die "$s answered non-2xx responses on $t"
  fi
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  reqs=$(awk '/ requests in / {print $1}' <<<"$out")
  [[ -n $rps && -n $reqs && $reqs -gt 0 ]] || { echo "$out" >&2; die "cannot parse wrk output"; }
  cpu_us=$(awk -v t=$((after - before)) -v hz="$clk_tck" -v n="$reqs" \
    'BEGIN {printf "%.2f", t / hz / n * 1e6}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$t" "$s" "$n" "$rps" "$cpu_us" >>"$results"
  if ((count)); then # "value,unit,event,..." -> per request
    awk -F, -v n="$reqs" -v k="$w\t$t\t$s\t$n" '$1 ~ /^[0-9.]+$/ && $1 > 0 {
      e = $3; sub(/^syscalls:sys_enter_/, "", e); sub(/^raw_syscalls:sys_enter$/, "all system calls", e)
      if (e == "task-clock") { e = "task-clock µs"; $1 = $1 * 1000 } # msec
      printf "%s\t%s\t%.4f\n", k, e, $1 / n }' \
      "$run/perf.out" >>"$counts"
    awk -v b="$split_before" -v a="$split_after" -v hz="$clk_tck" -v n="$reqs" -v k="$w\t$t\t$s\t$n" \
      'BEGIN { split(b, x, " "); split(a, y, " ")
        printf "%s\tuser µs\t%.4f\n%s\tsystem µs\t%.4f\n", k, (y[1] - x[1]) / hz / n * 1e6,
          k, (y[2] - x[2]) / hz / n * 1e6 }' >>"$counts"
  fi
  printf 'workers %d round %d  %-9s %-5s %10.0f req/s  %7.2f µs CPU/req  (%d requests)\n' \
    "$w" "$n" "$t" "$s" "$rps" "$cpu_us" "$reqs"
}

note "wrk -c$conns -d${seconds}s (-t = workers), 1 s warm-up each, $rounds rounds," \
  "plaintext pipelined 16, queries/updates ?queries=$queries, CLK_TCK $clk_tck, $(nproc) CPUs"
for w in $workers_list; do
  rm -f "$run"/*.db*
  python3 "$here/data.py" "$run/tfb.db"
  cp "$run/tfb.db" "$run/nginx.db"
  cp "$run/tfb.db" "$run/zever.db"
  start_nginx "$w" "$run/nginx.db"
  start_zever "$w" "$run/zever.db"
  python3 "$here/check.py" nginx "http://127.0.0.1:${port[nginx]}" "$run/nginx.db"
  python3 "$here/check.py" zever "http://127.0.0.1:${port[zever]}" "$run/zever.db"
  read -r load _ </proc/loadavg
  note "workers $w: load average before the runs: $load on $(nproc) CPUs"
  for ((n = 1; n <= rounds; n++)); do
    for t in $tests; do
      for s in nginx zever; do measure "$s" "$t" "$w" "$n"; done
    done
  done
  read -r load _ </proc/loadavg
  note "workers $w: load average after the runs: $load"
  # A WAL that never restarts grows by every commit (and each commit then checkpoints).
  note "workers $w: WAL after the runs: nginx $(stat -c %s "$run/nginx.db-wal" 2>/dev/null || echo 0)" \
    "bytes, zever $(stat -c %s "$run/zever.db-wal" 2>/dev/null || echo 0) bytes"
  stop_servers
done

echo
python3 - "$results" "$counts" <<'PY'
import statistics, sys
rows = {}  # (workers, test, server) -> {round: (req/s, CPU us/req)}
order = []
for line in open(sys.argv[1]):
    w, t, s, n, rps, cpu = line.rstrip("\n").split("\t")
    rows.setdefault((int(w), t, s), {})[int(n)] = (float(rps), float(cpu))
    if (int(w), t) not in order:
        order.append((int(w), t))
CPU_TARGET = {"plaintext": 0.8, "json": 0.8, "db": 0.8, "queries": 1.0, "updates": 1.0,
              "fortunes": 1.0}
med = {k: [statistics.median(x[i] for x in v.values()) for i in range(2)] for k, v in rows.items()}
print("medians of %d rounds; ratio = zever / nginx (targets: req/s >= 1.00, CPU/req <= the "
      "column's)" % max(len(v) for v in rows.values()))
print("%-2s %-9s %9s %9s %6s %4s  %8s %8s %6s %4s %6s  %s" % (
    "w", "test", "nginx r/s", "zever r/s", "ratio", "", "nginx µs", "zever µs", "ratio", "",
    "target", "rounds (req/s ratio | CPU ratio)"))
for w, t in order:
    g, z = rows.get((w, t, "nginx")), rows.get((w, t, "zever"))
    if not g or not z:
        continue
    mg, mz = med[(w, t, "nginx")], med[(w, t, "zever")]
    rr, cr = mz[0] / mg[0], mz[1] / mg[1]
    per = " ".join("%.2f|%.2f" % (z[n][0] / g[n][0], z[n][1] / g[n][1]) for n in sorted(z) if n in g)
    print("%-2d %-9s %9.0f %9.0f %5.2fx %4s  %8.2f %8.2f %5.2fx %4s %5.2fx  %s" % (
        w, t, mg[0], mz[0], rr, "met" if rr >= 1.0 else "MISS", mg[1], mz[1], cr,
        "met" if cr <= CPU_TARGET[t] else "MISS", CPU_TARGET[t], per))

ev = {}  # (workers, test) -> event -> server -> [per request, one per round]
for line in open(sys.argv[2]):
    w, t, s, n, e, v = line.rstrip("\n").split("\t")
    ev.setdefault((int(w), t), {}).setdefault(e, {}).setdefault(s, []).append(float(v))
KINDS = ("context-switches", "cpu-migrations", "page-faults", "task-clock µs", "user µs",
         "system µs", "all system calls")
for w, t in order:
    if (w, t) not in ev:
        continue
    m = {e: {s: statistics.median(v) for s, v in by.items()} for e, by in ev[(w, t)].items()}
    print("\n%d worker(s), %s: per request (medians), system calls then scheduler events" % (w, t))
    print("  %-18s %8s %8s %8s" % ("event", "nginx", "zever", "z - n"))
    named = {"nginx": 0.0, "zever": 0.0}
    rows_ = []
    for e, by in m.items():
        g, z = by.get("nginx", 0.0), by.get("zever", 0.0)
        if e not in KINDS:
            named["nginx"] += g
            named["zever"] += z
        if g >= 0.01 or z >= 0.01:
            rows_.append((e in KINDS, -max(g, z), e, g, z))
    all_ = m.get("all system calls", {})
    g, z = all_.get("nginx", 0.0) - named["nginx"], all_.get("zever", 0.0) - named["zever"]
    if g >= 0.01 or z >= 0.01:
        rows_.append((False, 0, "other", g, z))
    for _, _, e, g, z in sorted(rows_):
        print("  %-18s %8.2f %8.2f %+8.2f" % (e, g, z, z - g))
PY
