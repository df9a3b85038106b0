/*
 * bench/http/syscall_threads.c: the system time of a loopback TCP recv/send ping-pong, in a
 * process of one thread or with idle threads beside it. It asks whether a worker thread pays
 * more kernel time per system call than a single-threaded nginx worker (a process with several
 * threads takes an atomic reference on each file it passes to the kernel). It measures the
 * kernel's cost only: the ping-pong runs in the main thread; the others wait in pause().
 *
 *   cc -O2 -std=c99 -Wall -Wextra -o /tmp/syscall_threads bench/http/syscall_threads.c -lpthread
 *   for r in 1 2 3; do /tmp/syscall_threads 0 300000; /tmp/syscall_threads 1 300000; done
 *
 * Prints the system and user time per system call (4 a round: two sends, two receives), from
 * getrusage. Not part of make bench: a one-off question, answered in BENCHMARKS.md (session 15).
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static void *idle(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

static double ns(struct timeval tv) {
  return tv.tv_sec * 1e9 + tv.tv_usec * 1e3;
}

static int die(const char *what) {
  perror(what);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: syscall_threads IDLE_THREADS ROUNDS\n");
    return 2;
  }
  int threads = atoi(argv[1]);
  long rounds = atol(argv[2]);
  for (int i = 0; i < threads; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, idle, NULL) != 0) return die("pthread_create");
  }
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
      getsockname(l, (struct sockaddr *)&a, &alen) != 0)
    return die("listen");
  int c = socket(AF_INET, SOCK_STREAM, 0);
  if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0) return die("connect");
  int s = accept(l, NULL, NULL);
  if (s < 0) return die("accept");
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char buf[4096];
  memset(buf, 'x', sizeof buf);
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  for (long i = 0; i < rounds; i++) {
    /* A request of 100 bytes one way, a response of 150 the other, as a small HTTP exchange. */
    if (send(c, buf, 100, 0) != 100 || recv(s, buf, sizeof buf, 0) <= 0 ||
        send(s, buf, 150, 0) != 150 || recv(c, buf, sizeof buf, 0) <= 0)
      return die("ping-pong");
  }
  getrusage(RUSAGE_SELF, &r1);
  double calls = 4.0 * (double)rounds;
  printf("idle threads %d: system %.1f ns/call, user %.1f ns/call\n", threads,
         (ns(r1.ru_stime) - ns(r0.ru_stime)) / calls, (ns(r1.ru_utime) - ns(r0.ru_utime)) / calls);
  return 0;
}
