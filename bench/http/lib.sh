# bench/http/lib.sh: what the peer benchmarks (bench/http/run.sh, bench/tfb/run.sh) share:
# process helpers that only ever touch the PIDs the script started, and the vendor nginx +
# ngx_lua (.debs fetched with `apt-get download` and unpacked into bench/http/vendor, never
# installed); and, at the end, the set-up of Debian's nginx over TLS that tls.sh, h2.sh,
# tls_handshake.sh and callgrind_h2.sh share (and static.sh, callgrind_tls_handshake.sh,
# callgrind_hello.sh and bench/tfb/callgrind_nginx.sh their pieces of it). Sourced, not run: the sourcing script sets root (the repository), run (its
# temporary folder) and defines die and note first; vendor_setup needs network access once.
# shellcheck shell=bash disable=SC2154  # root and run come from the sourcing script

here_http=$root/bench/http
vendor=$here_http/vendor
vroot=$vendor/root
vlib=$vroot/usr/lib/x86_64-linux-gnu
nginx_bin=$vroot/usr/sbin/nginx

alive() { [[ -n $1 ]] && kill -0 "$1" 2>/dev/null; }

# proc_state PID: the state letter from /proc/<pid>/stat (field 3, after the ")" of the name).
proc_state() {
  local line
  line=$(cat /proc/"$1"/stat 2>/dev/null) || { echo X; return 0; }
  line=${line##*) }
  echo "${line%% *}"
}

# nginx_worker_pids MASTER: the children of our master that run the vendor nginx binary.
nginx_worker_pids() {
  local kids k
  kids=$(cat /proc/"$1"/task/*/children 2>/dev/null || true)
  for k in $kids; do
    [[ $(readlink /proc/"$k"/exe 2>/dev/null) == "$nginx_bin" ]] && echo "$k"
  done
  return 0
}

stop() { # stop PID: SIGTERM, up to 5 s, then SIGKILL; reaps it (it is our child)
  local pid=$1 i
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    [[ $(proc_state "$pid") == [ZX] ]] && break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# --- vendor: nginx, ngx_lua, OpenResty's LuaJIT, lua-resty-core, lua-cjson -----------------
debs=(nginx nginx-common libnginx-mod-http-lua libnginx-mod-http-ndk lua-resty-core
  lua-resty-lrucache libluajit2-5.1-2 lua-cjson)

# The package that ships a shared library nginx or its modules may miss on a bare system.
lib_package() {
  case $1 in
    libpcre.so.3) echo libpcre3 ;;
    libpcre2-8.so.0) echo libpcre2-8-0 ;;
    libssl.so.3 | libcrypto.so.3) echo libssl3 ;;
    libz.so.1) echo zlib1g ;;
    libcrypt.so.1) echo libcrypt1 ;;
    *) return 1 ;;
  esac
}

fetch() { # fetch PACKAGE...: apt-get download into vendor/debs, unpack into vendor/root
  local p f
  mkdir -p "$vendor/debs" "$vroot"
  for p in "$@"; do rm -f "$vendor/debs/${p}_"*.deb; done # one version of each, the current one
  if ! (cd "$vendor/debs" && apt-get download "$@" >"$run/apt.log" 2>&1); then
    note "apt-get download failed; running apt-get update and retrying"
    apt-get update >>"$run/apt.log" 2>&1 || { cat "$run/apt.log" >&2; die "apt-get update failed"; }
    (cd "$vendor/debs" && apt-get download "$@" >>"$run/apt.log" 2>&1) ||
      { cat "$run/apt.log" >&2; die "apt-get download $* failed"; }
  fi
  for p in "$@"; do
    for f in "$vendor/debs/${p}_"*.deb; do dpkg-deb -x "$f" "$vroot"; done
  done
}

vendor_ready() {
  [[ -x $nginx_bin && -f $vroot/usr/lib/nginx/modules/ngx_http_lua_module.so &&
    -f $vroot/usr/lib/nginx/modules/ndk_http_module.so &&
    -f $vroot/usr/share/lua/5.1/resty/core.lua &&
    -f $vroot/usr/share/lua/5.1/resty/lrucache.lua && -f $vlib/libluajit-5.1.so.2.1.0 &&
    -e $vlib/lua/5.1/cjson.so ]]
}

# vendor_ld_path: sets ld_path, nginx's LD_LIBRARY_PATH: the vendor libraries (and any system
# library fetched by vendor_setup) first.
vendor_ld_path() {
  ld_path=$vlib
  [[ -d $vroot/lib/x86_64-linux-gnu ]] && ld_path=$ld_path:$vroot/lib/x86_64-linux-gnu
  return 0
}

# vendor_setup: makes sure the vendor nginx is unpacked and has every library it needs; sets
# ld_path (the LD_LIBRARY_PATH to start it with).
vendor_setup() {
  if ! vendor_ready; then
    note "fetching nginx + ngx_lua .debs into $vendor (not installed system-wide)"
    fetch "${debs[@]}"
    vendor_ready || die "the unpacked .debs lack a file this benchmark needs (see $vroot)"
  fi
  # The package's ldconfig trigger would make this link; there is none for an unpacked .deb.
  ln -sf libluajit-5.1.so.2.1.0 "$vlib/libluajit-5.1.so.2"

  vendor_ld_path
  local missing still lib pkg extra
  missing=$(LD_LIBRARY_PATH=$ld_path ldd "$nginx_bin" "$vroot"/usr/lib/nginx/modules/*.so |
    awk '/not found/ {print $1}' | sort -u)
  if [[ -n $missing ]]; then
    extra=()
    for lib in $missing; do
      pkg=$(lib_package "$lib") || die "nginx needs $lib and this script does not know its package"
      extra+=("$pkg")
    done
    note "fetching libraries nginx needs: ${extra[*]}"
    fetch "${extra[@]}"
    vendor_ld_path
    still=$(LD_LIBRARY_PATH=$ld_path ldd "$nginx_bin" "$vroot"/usr/lib/nginx/modules/*.so |
      awk '/not found/ {print $1}' | sort -u)
    [[ -z $still ]] || die "still missing after fetching: $still"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# cpu_ticks PID...: utime + stime (fields 14 and 15 of /proc/<pid>/stat, clock ticks), summed.
# The command name (field 2) may hold spaces, so fields are counted after its closing ")".
cpu_ticks() {
  local total=0 pid line rest f
  for pid in "$@"; do
    line=$(cat /proc/"$pid"/stat) || die "process $pid is gone"
    rest=${line##*) }
    read -r -a f <<<"$rest"
    total=$((total + f[11] + f[12]))
  done
  echo "$total"
}

wait_ready() { # wait_ready PID URL: up to 10 s for a 200
  local pid=$1 url=$2 i
  for ((i = 0; i < 100; i++)); do
    alive "$pid" || return 1
    [[ $(curl -s -o /dev/null -w '%{http_code}' -m 1 "$url" 2>/dev/null) == 200 ]] && return 0
    sleep 0.1
  done
  return 1
}

# get_n PORT N ROUTE: N requests GET ROUTE one after another on one keep-alive connection, each
# answered 200: the client of the per-request instruction counts (callgrind_hello.sh,
# bench/tfb/callgrind_nginx.sh), whose own instructions are not counted.
get_n() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
for _ in range(int(sys.argv[2])):
    c.request("GET", sys.argv[3])
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
PY
}

# cg_total FILE: the instructions a callgrind output file counted (its summary or totals line).
cg_total() {
  grep '^summary:\|^totals:' "$1" | head -1 | grep -o '[0-9]*$'
}

# --- Debian's nginx (nginx-light) over TLS: bench/http/tls.sh, h2.sh, tls_handshake.sh --------
# The installed /usr/sbin/nginx (not the vendor one above), 1 worker, access log off, a fresh
# self-signed EC P-256 certificate shared with zever, TLS 1.2 and 1.3, tickets on, no server-side
# session cache; /hello answered by `return 200 "hello world"` (no Lua: its cheapest case).
sys_nginx=/usr/sbin/nginx

# tls_cert: $run/cert.pem and $run/key.pem, the certificate both servers use.
tls_cert() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=localhost -keyout "$run/key.pem" -out "$run/cert.pem" 2>/dev/null ||
    die "openssl req failed"
}

# sys_nginx_conf LISTEN...: writes $run/nginx.conf with one server on these listen parameters
# (e.g. "127.0.0.1:8443 ssl http2"). NGINX_FOREGROUND=1: one process, not daemonised (to run
# it under valgrind: PEER=nginx bash bench/http/callgrind_h2.sh).
sys_nginx_conf() {
  local user_line="" listens="" l mode="daemon on; master_process on;"
  [[ -x $sys_nginx ]] || die "$sys_nginx is missing (Debian nginx-light)"
  [[ $(id -u) == 0 ]] && user_line="user root;"
  [[ ${NGINX_FOREGROUND:-0} == 1 ]] && mode="daemon off; master_process off;"
  for l in "$@"; do listens+="    listen $l;"$'\n'; done
  mkdir -p "$run/nginx"
  cat >"$run/nginx.conf" <<CONF
$user_line
$mode
worker_processes 1;
pid $run/nginx.pid;
error_log $run/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $run/nginx/body;
  proxy_temp_path $run/nginx/proxy;
  fastcgi_temp_path $run/nginx/fastcgi;
  uwsgi_temp_path $run/nginx/uwsgi;
  scgi_temp_path $run/nginx/scgi;
  server {
$listens    ssl_certificate $run/cert.pem;
    ssl_certificate_key $run/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_tickets on;
    ssl_session_cache off;
    location = /hello {
      default_type "text/plain; charset=utf-8";
      return 200 "hello world";
    }
  }
}
CONF
}

# sys_nginx_start LISTEN...: sys_nginx_conf, then nginx started daemonised (its pid file is
# $run/nginx.pid; sys_nginx_stop stops it). Sets nginx_master.
sys_nginx_start() {
  local i
  sys_nginx_conf "$@"
  "$sys_nginx" -p "$run/nginx" -c "$run/nginx.conf" -e "$run/error.log" || die "nginx did not start"
  for ((i = 0; i < 100; i++)); do [[ -s $run/nginx.pid ]] && break; sleep 0.05; done
  nginx_master=$(cat "$run/nginx.pid") || die "nginx wrote no pid file"
}

# sys_nginx_pids: nginx's master and its workers.
sys_nginx_pids() {
  echo "$nginx_master $(cat /proc/"$nginx_master"/task/*/children 2>/dev/null)"
}

# sys_nginx_stop: the nginx sys_nginx_start started (by its pid file), if it runs.
sys_nginx_stop() {
  [[ -f $run/nginx.pid ]] && stop_daemon "$(cat "$run/nginx.pid")"
  return 0
}

stop_daemon() { # stop_daemon PID: as stop, for a process that is not our child (nginx's master)
  local pid=$1 i
  alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do alive "$pid" || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

# median: the median of the numbers on stdin (blank-separated or one a line).
median() {
  tr ' ' '\n' | grep -v '^$' | sort -g |
    awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
