/*
 * secrets.c: what a file-based secret may be: zv_secrets_stat gives its mode and owner so that
 * adapters.secrets.file can refuse a file that group or others may read, or that another user
 * owns. It reads no file content and keeps no state.
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "secrets.h"

int zv_secrets_stat(const char *path, uint32_t *mode, uint32_t *uid, uint32_t *euid) {
  struct stat st;
  if (stat(path, &st) != 0) return -errno;
  *mode = (uint32_t)st.st_mode;
  *uid = (uint32_t)st.st_uid;
  *euid = (uint32_t)geteuid();
  return 0;
}
