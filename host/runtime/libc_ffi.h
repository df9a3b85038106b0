/*
 * libc_ffi.h: the C library calls Lua makes through LuaJIT's FFI (zever.config.env reads environ,
 * zever.queue's wall clock reads clock_gettime, the log mailer names errno values with strerror,
 * bench/config_bench.lua fills the environment with clearenv and setenv (config_spec sets and
 * unsets variables of its own), zever test sets
 * ZEVER_ENV with setenv, zever.config.paths reads getcwd, zever.cli.app's -C calls chdir,
 * zever.server.reexec calls execv, zever new makes folders with mkdir, and zever lsp
 * (dsl/lsp.lua) waits on stdin with poll and reads it with read, zever test --seeds reads its
 * runs through popen, poll, read and waitpid, adapters.cache.memory's get_unless compares a value
 * with memcmp, and spec/host/loop_spec.lua gives loop.poll a pipe: pipe, write, close). Lua
 * loads it with
 * require("zever.cdef.libc"). The Makefile runs this file through the preprocessor with
 * -DZV_FFI_CDEF into build/ffi.h, which the host preloads; C compiles it next to the libc headers
 * (runtime/state.c), so the compiler rejects any drift from them.
 *
 * It must hold only declarations ffi.cdef parses: includes stay inside the ZV_FFI_CDEF guard,
 * and what the libc headers define is given to the FFI in the #else branch.
 */
#ifndef ZV_LIBC_FFI_H
#define ZV_LIBC_FFI_H

#ifndef ZV_FFI_CDEF
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#else
typedef int clockid_t;
typedef int pid_t;
typedef unsigned int mode_t;
struct timespec {
  long tv_sec;
  long tv_nsec;
};
typedef unsigned long nfds_t;
typedef struct FILE FILE; /* opaque: only passed back to the C library */
struct pollfd {
  int fd;
  short events;
  short revents;
};
#endif

extern char **environ;
char *strerror(int errnum);
int clock_gettime(clockid_t clk, struct timespec *ts);
int clearenv(void);
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
char *getcwd(char *buf, size_t size);
int chdir(const char *path);
int execv(const char *path, char *const argv[]);
int mkdir(const char *path, mode_t mode);
int poll(struct pollfd *fds, nfds_t nfds, int timeout);
ssize_t read(int fd, void *buf, size_t count);
FILE *popen(const char *command, const char *type);
int pclose(FILE *stream);
int fileno(FILE *stream);
pid_t waitpid(pid_t pid, int *wstatus, int options);
int memcmp(const void *a, const void *b, size_t n);
int pipe(int fds[2]);
ssize_t write(int fd, const void *buf, size_t count);
int close(int fd);

#endif
