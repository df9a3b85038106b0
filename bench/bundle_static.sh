#!/usr/bin/env bash
# bench/bundle_static.sh: app:static served from a bundle's payload against the same app served
# from the checkout (the files on disk), side by side (issue #25).
#
# One app (app:static("/assets", "public")) with a 1 KiB and a 1 MiB file is served twice, one
# worker each: `bin/zever serve app` (disk: openat2 + fstat + pread/sendfile per request) and
# `zever bundle app` run from an empty folder (payload: an index lookup, the mapping or
# sendfile from the bundle file). wrk runs alternate between them:
#
#   for each round: disk 1k, bundle 1k, disk 1m, bundle 1m (each `wrk -t1 -c<C> -d<S>s`)
#
# and the medians of req/s are printed with the bundle/disk ratio. On a loaded machine the two
# move alike: compare the ratio, not the absolute numbers.
#
# Environment: BENCH_SECONDS (default 5), BENCH_ROUNDS (default 3), BENCH_CONNECTIONS (64).
# It must not kill anything it did not start: its servers are stopped by PID on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${BENCH_SECONDS:-5} rounds=${BENCH_ROUNDS:-3} conns=${BENCH_CONNECTIONS:-64}
command -v wrk >/dev/null || { echo "bench/bundle_static: wrk is not installed" >&2; exit 1; }
tmp=$(mktemp -d /tmp/zever-bundle-static.XXXXXX)
disk_pid="" bundle_pid=""
cleanup() {
  for p in $disk_pid $bundle_pid; do kill -TERM "$p" 2>/dev/null || true; done
  for p in $disk_pid $bundle_pid; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/app/public" "$tmp/run"
cat > "$tmp/app/app.lua" <<'LUA'
local app = require("zever").app()
app:static("/assets", "public")
return app
LUA
head -c 1024 /dev/urandom > "$tmp/app/public/1k.bin"
head -c 1048576 /dev/urandom > "$tmp/app/public/1m.bin"
bin/zever bundle "$tmp/app" -o "$tmp/run/app" >/dev/null
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pd=$(free_port); bin/zever serve "$tmp/app" --listen "127.0.0.1:$pd" --workers 1 \
  >"$tmp/disk.log" 2>&1 & disk_pid=$!
pb=$(free_port); (cd "$tmp/run" && exec env -u ZEVER_HOME ./app serve --listen "127.0.0.1:$pb" \
  --workers 1) >"$tmp/bundle.log" 2>&1 & bundle_pid=$!
for p in $pd $pb; do
  for _ in $(seq 300); do curl -sf -o /dev/null "127.0.0.1:$p/assets/1k.bin" && break; sleep 0.1; done
done
cmp <(curl -s "127.0.0.1:$pb/assets/1m.bin") "$tmp/app/public/1m.bin"
rps() { wrk -t1 -c"$conns" -d"${seconds}s" "$1" | awk '/Requests\/sec/ {print $2}'; }
declare -A res
for _ in $(seq "$rounds"); do
  for f in 1k 1m; do
    res[disk_$f]+="$(rps "http://127.0.0.1:$pd/assets/$f.bin") "
    res[bundle_$f]+="$(rps "http://127.0.0.1:$pb/assets/$f.bin") "
  done
done
median() { printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $rounds rounds of ${seconds}s, $conns connections"
for f in 1k 1m; do
  d=$(median "${res[disk_$f]}") b=$(median "${res[bundle_$f]}")
  printf 'BenchmarkStatic%-4s disk %10.0f req/s  bundle %10.0f req/s  bundle/disk %.2fx  (disk: %s; bundle: %s)\n' \
    "$f" "$d" "$b" "$(echo "$b / $d" | bc -l)" "${res[disk_$f]% }" "${res[bundle_$f]% }"
done
