/*
 * sys.c: locating the zever home and the running binary, the monotonic and the wall clock.
 *
 * It reads /proc/self/exe (Linux) and the environment; it allocates nothing.
 */
#define _POSIX_C_SOURCE 200809L
#include "sys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/zv.h"

int zv_sys_exe(char *buf, size_t cap) {
  ssize_t n;
  if (cap < 2) return ZV_ETOOLONG;
  n = readlink("/proc/self/exe", buf, cap - 1);
  if (n < 0) return ZV_EIO;
  if ((size_t)n >= cap - 1) return ZV_ETOOLONG;
  buf[n] = '\0';
  return 0;
}

static int is_home(const char *dir) {
  char probe[4096];
  struct stat st;
  int n = snprintf(probe, sizeof probe, "%s/cmd/zever/init.lua", dir);
  if (n < 0 || (size_t)n >= sizeof probe) return 0;
  return stat(probe, &st) == 0;
}

/* Cuts the last path component off path in place; "/a/b" becomes "/a". */
static void dirname_inplace(char *path) {
  char *slash = strrchr(path, '/');
  if (!slash) return;
  if (slash == path) slash[1] = '\0';
  else *slash = '\0';
}

int zv_sys_home(char *buf, size_t cap) {
  const char *env = getenv("ZEVER_HOME");
  char exe[4096];
  int rc;
  if (env && *env) {
    if (strlen(env) >= cap) return ZV_ETOOLONG;
    strcpy(buf, env);
    return 0;
  }
  rc = zv_sys_exe(exe, sizeof exe);
  if (rc) return rc;
  dirname_inplace(exe); /* .../bin */
  dirname_inplace(exe); /* ... */
  if (is_home(exe)) {
    if (strlen(exe) >= cap) return ZV_ETOOLONG;
    strcpy(buf, exe);
    return 0;
  }
  rc = snprintf(buf, cap, "%s/share/zever", exe);
  if (rc < 0 || (size_t)rc >= cap) return ZV_ETOOLONG;
  return is_home(buf) ? 0 : ZV_ENOTFOUND;
}

uint64_t zv_sys_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double zv_sys_clock(void) {
  return (double)zv_sys_now_ns() / 1e9;
}

double zv_sys_wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
