"""bench/tfb/procs.py N HOST PORT PIDFILE -- COMMAND...: run COMMAND as N processes that each
accept on a socket of their own bound to HOST:PORT with SO_REUSEPORT (the kernel spreads the
connections), as nginx's worker processes do in bench/tfb/nginx.conf.in. Each child gets its
socket as descriptor 3 through socket activation (LISTEN_FDS=1, LISTEN_PID = its own pid), which
`zever serve` accepts on (docs/deploy.md); so `zever serve --workers 1` run this way is zever
with one worker per process instead of threads of one process (bench/tfb/run.sh,
BENCH_TFB_ZEVER_PROCESSES=1). The children's pids go to PIDFILE, one a line. SIGTERM/SIGINT are
passed on to every child; it exits when they all have, with the first non-zero status.
"""
import os
import signal
import socket
import sys


def main(argv):
    if len(argv) < 6 or argv[4] != "--" or not argv[0].isdigit() or int(argv[0]) < 1:
        sys.exit("usage: procs.py N HOST PORT PIDFILE -- COMMAND...")
    n, host, port, pidfile, cmd = int(argv[0]), argv[1], int(argv[2]), argv[3], argv[5:]
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        s.bind((host, port))
        s.listen(511)
        socks.append(s)
    children = []
    for s in socks:
        pid = os.fork()
        if pid == 0:
            os.dup2(s.fileno(), 3)
            os.set_inheritable(3, True)
            env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()))
            os.execvpe(cmd[0], cmd, env)
        children.append(pid)
    for s in socks:
        s.close()
    with open(pidfile, "w") as f:
        f.write("".join("%d\n" % p for p in children))

    def forward(sig, _frame):
        for p in children:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    status = 0
    for p in children:
        while True:
            try:
                _, st = os.waitpid(p, 0)
                break
            except InterruptedError:
                continue
        code = os.waitstatus_to_exitcode(st)
        if code and not status:
            status = code if code > 0 else 128 - code
    sys.exit(status)


if __name__ == "__main__":
    main(sys.argv[1:])
