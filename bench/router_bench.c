/*
 * router_bench.c: lookups in the GitHub REST API route table (203 routes), the table of the Go
 * HTTP routing benchmark, against the router's core.
 *
 *   GithubStatic  GET /user/repos
 *   GithubParam   GET /repos/julienschmidt/httprouter/stargazers   (two parameters)
 *   GithubAll     every route once, its parameters filled in with their names
 *   GithubMiss    GET /repos/julienschmidt/httprouter/nothing      (404, full backtracking)
 *
 * The table is read at start from $ZV_GITHUB_ROUTES, else ../shared/data/github-api-routes.txt
 * relative to the repository root (where `make bench` runs). It must not time setup or leave
 * anything allocated per lookup: every scenario must report 0 allocs/op.
 */
#include "bench.h"

#include "../host/router/trie.h"

#define MAX_ROUTES 512
#define LINE_MAX 512

typedef struct {
  char method[16];
  char pattern[LINE_MAX];
  char path[LINE_MAX];
} route_line_t;

static route_line_t lines[MAX_ROUTES];
static size_t nlines;
static zv_router_t *github;

static const char *const candidates[] = {
  "../shared/data/github-api-routes.txt",
  "/work/shared/data/github-api-routes.txt",
};

/* ":owner" becomes "owner": a request path with every parameter filled in. */
static void fill(const char *pattern, char *out) {
  size_t k = 0;
  for (const char *p = pattern; *p; p++)
    if (!(*p == ':' && p > pattern && p[-1] == '/')) out[k++] = *p;
  out[k] = '\0';
}

static void load(void) {
  const char *env = getenv("ZV_GITHUB_ROUTES");
  FILE *f = NULL;
  char buf[LINE_MAX], err[256];
  if (env && *env) f = fopen(env, "r");
  for (size_t i = 0; !f && i < ZV_ARRAY_SIZE(candidates); i++) f = fopen(candidates[i], "r");
  if (!f) {
    fprintf(stderr, "router_bench: github-api-routes.txt not found; set ZV_GITHUB_ROUTES\n");
    exit(1);
  }
  if (zv_router_new(&github)) exit(1);
  while (fgets(buf, sizeof buf, f) && nlines < MAX_ROUTES) {
    route_line_t *l = &lines[nlines];
    if (buf[0] == '#' || buf[0] == '\n') continue;
    if (sscanf(buf, "%15s %511s", l->method, l->pattern) != 2) continue;
    fill(l->pattern, l->path);
    if (zv_router_add(github, l->method, strlen(l->method), l->pattern, strlen(l->pattern),
                      (int)nlines, err, sizeof err)) {
      fprintf(stderr, "router_bench: %s\n", err);
      exit(1);
    }
    nlines++;
  }
  fclose(f);
}

static void expect(const char *method, const char *path, int kind) {
  zv_router_match_t m;
  if (zv_router_match(github, method, strlen(method), path, strlen(path), &m) != kind) {
    fprintf(stderr, "router_bench: %s %s gave kind %d, want %d\n", method, path, m.kind, kind);
    exit(1);
  }
}

static void lookup(zv_bench_t *b, const char *method, const char *path, int kind) {
  zv_router_match_t m;
  size_t mlen = strlen(method), plen = strlen(path);
  expect(method, path, kind);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_router_match(github, method, mlen, path, plen, &m);
    zv_bench_keep(m.id + m.nparams);
  }
}

static void bench_static(zv_bench_t *b) {
  lookup(b, "GET", "/user/repos", ZV_ROUTER_FOUND);
}

static void bench_param(zv_bench_t *b) {
  lookup(b, "GET", "/repos/julienschmidt/httprouter/stargazers", ZV_ROUTER_FOUND);
}

static void bench_miss(zv_bench_t *b) {
  lookup(b, "GET", "/repos/julienschmidt/httprouter/nothing", ZV_ROUTER_NOT_FOUND);
}

static void bench_all(zv_bench_t *b) {
  static size_t mlens[MAX_ROUTES], plens[MAX_ROUTES];
  zv_router_match_t m;
  for (size_t j = 0; j < nlines; j++) {
    mlens[j] = strlen(lines[j].method);
    plens[j] = strlen(lines[j].path);
    expect(lines[j].method, lines[j].path, ZV_ROUTER_FOUND);
  }
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++)
    for (size_t j = 0; j < nlines; j++) {
      zv_router_match(github, lines[j].method, mlens[j], lines[j].path, plens[j], &m);
      zv_bench_keep(m.id);
    }
}

static void cases(int argc, char **argv);

int main(int argc, char **argv) {
  load();
  if (nlines != 203) fprintf(stderr, "router_bench: note: %zu routes, not 203\n", nlines);
  cases(argc, argv);
  zv_router_free(github);
  return 0;
}

static void cases(int argc, char **argv) {
  static const zv_bench_case_t list[] = {
    ZV_BENCH(RouterGithubStatic, bench_static)
    ZV_BENCH(RouterGithubParam, bench_param)
    ZV_BENCH(RouterGithubAll, bench_all)
    ZV_BENCH(RouterGithubMiss, bench_miss)
  };
  zv_bench_main(argc, argv, list, ZV_ARRAY_SIZE(list));
}
