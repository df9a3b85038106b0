#!/usr/bin/env bash
# bench/first_request.sh: the time from exec to the first answered request (issue #25: <= 20 ms)
# for examples/hello served from the checkout (`bin/zever serve examples/hello`) and from its
# bundle (`zever bundle examples/hello`, run from an empty folder, ZEVER_HOME unset).
#
# Each run starts the server on a free port (1 worker) and connects and sends GET /hello in a
# loop (100 us between refused connects, so the poller does not take the server's core) until
# a 200 comes back; the two are run alternately RUNS times (default 20) and the median and p90
# are printed, of the wall time and of the CPU time the server's threads used until then
# (/proc/<pid>/task/*/schedstat: what a loaded machine moves least). Then, unless NO_CALLGRIND=1, the instructions of each (start, one request,
# drain, exit) per thread with valgrind's callgrind, which a loaded machine does not move.
#
# BEFORE=/path/to/another/zever/tree (built with make) adds that tree's `bin/zever serve
# examples/hello` to the alternation (and to the instruction counts): a before/after comparison
# in one run, e.g. of main before a merge (`git worktree add /tmp/zv-before <rev> && make -C
# /tmp/zv-before`). RUNS=20 with callgrind takes about a minute on a quiet machine.
#
# It must not kill anything it did not start: each server is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-20}
tmp=$(mktemp -d /tmp/zever-first-request.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/run"
bin/zever bundle examples/hello -o "$tmp/run/hello" >/dev/null
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $runs runs each, alternating"
before=${BEFORE:-}
[[ -n $before ]] && before=$(cd "$before" && pwd)
(cd "$tmp/run" && env -u ZEVER_HOME python3 - "$runs" ./hello "$OLDPWD/bin/zever" \
  "$OLDPWD/examples/hello" "$before" <<'PY'
import glob, socket, statistics, subprocess, sys, time
runs, bundle, zever, app = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
before = sys.argv[5]
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
def first(cmd):
    port = free_port()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd + ["--listen", "127.0.0.1:%d" % port, "--workers", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=5)
            c.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            got = c.recv(64)
            c.close()
            if got.startswith(b"HTTP/1.1 200"):
                t = time.perf_counter() - t0
                cpu = 0
                for f in glob.glob("/proc/%d/task/*/schedstat" % p.pid):
                    try: cpu += int(open(f).read().split()[0])
                    except OSError: pass
                break
        except OSError:
            time.sleep(0.0001)
    p.terminate(); p.wait()
    return t * 1e3, cpu / 1e6
tz, tb, to = [], [], []
for _ in range(runs):
    if before:
        to.append(first([before + "/bin/zever", "serve", before + "/examples/hello"]))
    tz.append(first([zever, "serve", app]))
    tb.append(first([bundle, "serve"]))
def p90(xs):
    return xs[min(len(xs) - 1, int(round(0.9 * len(xs))) - 1)]
for name, rows in (("ZeverFirstRequestBefore", to), ("ZeverFirstRequest", tz),
                   ("BundleFirstRequest", tb)):
    if not rows:
        continue
    ts = sorted(r[0] for r in rows)
    cs = sorted(r[1] for r in rows)
    print("Benchmark%-24s %3d runs  wall median %7.2f ms  p90 %7.2f ms  min %7.2f ms"
          "  | cpu median %6.2f ms  p90 %6.2f ms" % (
        name, len(ts), statistics.median(ts), p90(ts), ts[0], statistics.median(cs), p90(cs)))
PY
)
[[ ${NO_CALLGRIND:-0} == 1 ]] && exit 0
command -v valgrind >/dev/null || exit 0
count() { # name, then the command (run in the current folder)
  local name=$1 port; shift
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg.$name.%p" "$@" \
    --listen "127.0.0.1:$port" --workers 1 >/dev/null 2>"$tmp/cg.$name.err" & local pid=$!
  for _ in $(seq 600); do curl -s -o /dev/null "127.0.0.1:$port/hello" && break; sleep 0.1; done
  kill -TERM "$pid"; wait "$pid" || true
  local main worker
  main=$(grep -h -o '^summary: [0-9]*' "$tmp"/cg."$name".*-01 | cut -d' ' -f2)
  worker=$(grep -h -o '^summary: [0-9]*' "$tmp"/cg."$name".*-02 | cut -d' ' -f2)
  printf 'Instructions serve+1 request %-9s total %12s  main thread %12s  worker %12s\n' "$name" \
    "$(grep -o 'refs: .*' "$tmp/cg.$name.err" | tr -s ' ' | cut -d' ' -f2)" "$main" "$worker"
}
[[ -n $before ]] && count before "$before/bin/zever" serve "$before/examples/hello"
count checkout bin/zever serve examples/hello
(cd "$tmp/run" && count bundle ./hello serve)
