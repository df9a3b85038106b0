/*
 * systemd.c: sd_notify and the journal check, by hand (systemd.h). It must not block: the
 * datagram socket is non-blocking and a full receive queue loses the message (systemd's own
 * sd_notify behaves the same way).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/zv.h"
#include "systemd.h"

int zv_systemd_notify(const char *path, const char *msg, size_t len, int *err_no) {
  struct sockaddr_un sa;
  size_t plen = path ? strlen(path) : 0;
  socklen_t salen;
  ssize_t n;
  int fd;
  *err_no = 0;
  if (plen == 0 || plen >= sizeof sa.sun_path || (path[0] != '/' && path[0] != '@'))
    return ZV_EINVAL;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  memcpy(sa.sun_path, path, plen);
  if (path[0] == '@') sa.sun_path[0] = '\0';
  salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen + (path[0] == '/'));
  fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *err_no = errno;
    return ZV_EIO;
  }
  do {
    n = sendto(fd, msg, len, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
  } while (n < 0 && errno == EINTR);
  if (n < 0) *err_no = errno;
  close(fd);
  return n == (ssize_t)len ? 0 : ZV_EIO;
}

int zv_systemd_is_stream(int fd, const char *journal_stream) {
  unsigned long long dev, ino;
  struct stat st;
  char tail;
  if (!journal_stream || sscanf(journal_stream, "%llu:%llu%c", &dev, &ino, &tail) != 2) return 0;
  if (fstat(fd, &st) != 0) return 0;
  return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static pthread_mutex_t arrive_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t arrive_gen;
static int arrive_count;

int zv_systemd_arrive(uint64_t gen, int n) {
  int done;
  pthread_mutex_lock(&arrive_mu);
  if (gen != arrive_gen) {
    arrive_gen = gen;
    arrive_count = 0;
  }
  done = ++arrive_count == n;
  pthread_mutex_unlock(&arrive_mu);
  return done;
}

int zv_systemd_reap(void) {
  int n = 0, status;
  while (waitpid(-1, &status, WNOHANG) > 0) n++;
  return n;
}

int zv_systemd_forward(int sig) {
  return kill(-1, sig) == 0 ? 0 : ZV_EIO;
}
