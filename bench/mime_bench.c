/*
 * mime_bench.c: the MIME builder. BuildMIME renders a text + html message (multipart/
 * alternative, a UTF-8 subject, three recipients) into a fresh buffer each time, so its one
 * allocation is the buffer grown to the estimate; BuildMIMEReuse renders into a kept buffer
 * (what the log mailer does: 0 allocations). BuildMIMEAttachments adds a 512-byte attachment
 * (multipart/mixed). Base64Encode encodes 64 KiB in 76-column lines and prints MB/s.
 */
#include "bench.h"
#include "../host/mime/mime.h"

static const zv_mime_addr_t from[] = {{{"Zoë Example", 12}, {"zoe@example.com", 15}}};
static const zv_mime_addr_t to[] = {
  {{NULL, 0}, {"alice@example.com", 17}},
  {{"Bob Smith", 9}, {"bob@example.org", 15}},
};
static const zv_mime_addr_t bcc[] = {{{NULL, 0}, {"audit@example.com", 17}}};

static const char TEXT[] =
  "Hello Alice,\n\nYour order #12345 has shipped. It should arrive within three business days.\n"
  "Track it at https://example.com/track/12345.\n\nThanks for shopping with us!\n-- The Team\n";
static const char HTML[] =
  "<html><body><p>Hello Alice,</p><p>Your order <b>#12345</b> has shipped. It should arrive "
  "within three business days.</p><p><a href=\"https://example.com/track/12345\">Track it</a>"
  "</p><p>Thanks for shopping with us!<br>-- The Team</p></body></html>\n";

static unsigned char attachment[512];
static zv_mime_attachment_t atts[1];

static void setup(zv_mime_msg_t *m, int with_att) {
  static const char subject[] = "Your order #12345 has shipped — Grüße";
  memset(m, 0, sizeof *m);
  m->addrs[ZV_MIME_FROM] = from;
  m->naddrs[ZV_MIME_FROM] = 1;
  m->addrs[ZV_MIME_TO] = to;
  m->naddrs[ZV_MIME_TO] = 2;
  m->addrs[ZV_MIME_BCC] = bcc;
  m->naddrs[ZV_MIME_BCC] = 1;
  m->subject.s = subject;
  m->subject.len = sizeof subject - 1;
  m->text.s = TEXT;
  m->text.len = sizeof TEXT - 1;
  m->html.s = HTML;
  m->html.len = sizeof HTML - 1;
  m->now = 1796000000;
  m->nonce = 42;
  if (with_att) {
    for (size_t i = 0; i < sizeof attachment; i++) attachment[i] = (unsigned char)(i * 7 + 3);
    atts[0].filename.s = "report.pdf";
    atts[0].filename.len = 10;
    atts[0].content_type.s = "application/pdf";
    atts[0].content_type.len = 15;
    atts[0].data.s = (const char *)attachment;
    atts[0].data.len = sizeof attachment;
    m->attachments = atts;
    m->nattachments = 1;
  }
}

static void run_build(zv_bench_t *b, int with_att) {
  zv_mime_msg_t m;
  setup(&m, with_att);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    zv_mime_buf_t out;
    zv_mime_buf_init(&out);
    m.nonce = i;
    if (zv_mime_build(&m, &out, NULL, NULL)) abort();
    zv_bench_keep(out.len);
    zv_mime_buf_free(&out);
  }
}

static void bench_build(zv_bench_t *b) {
  run_build(b, 0);
}

static void bench_build_attachments(zv_bench_t *b) {
  run_build(b, 1);
}

static void bench_build_reuse(zv_bench_t *b) {
  zv_mime_msg_t m;
  zv_mime_buf_t out;
  setup(&m, 0);
  zv_mime_buf_init(&out);
  zv_mime_build(&m, &out, NULL, NULL);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    out.len = 0;
    m.nonce = i;
    if (zv_mime_build(&m, &out, NULL, NULL)) abort();
    zv_bench_keep(out.len);
  }
  zv_mime_buf_free(&out);
}

#define B64_IN (64 * 1024)
static unsigned char b64_src[B64_IN];
static zv_mime_buf_t b64_out;

static void bench_base64(zv_bench_t *b) {
  for (size_t i = 0; i < B64_IN; i++) b64_src[i] = (unsigned char)(i * 131 + 7);
  b64_out.len = 0;
  zv_mime_base64(&b64_out, b64_src, B64_IN);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    b64_out.len = 0;
    zv_mime_base64(&b64_out, b64_src, B64_IN);
    zv_bench_keep(b64_out.len);
  }
}

static void bench_qp(zv_bench_t *b) {
  for (size_t i = 0; i < B64_IN; i++) b64_src[i] = (unsigned char)(i % 61 == 60 ? '\n' : 'a' + i % 26);
  b64_out.len = 0;
  zv_mime_qp(&b64_out, b64_src, B64_IN);
  zv_bench_reset(b);
  for (uint64_t i = 0; i < b->n; i++) {
    b64_out.len = 0;
    zv_mime_qp(&b64_out, b64_src, B64_IN);
    zv_bench_keep(b64_out.len);
  }
}

/* Like the harness's line, with throughput (input bytes per op) appended as Go prints it. */
static void run_throughput(const char *name, void (*fn)(zv_bench_t *), size_t bytes) {
  double ns[5];
  uint64_t n = 2000;
  zv_bench_result_t r = zv_bench_once(fn, 10);
  (void)r;
  for (int i = 0; i < 5; i++) ns[i] = zv_bench_once(fn, n).ns_per_op;
  double med = zv_bench_median(ns, 5);
  printf("Benchmark%-28s %10llu %12.2f ns/op %10.2f MB/s %8.0f B/op %6.2f allocs/op\n", name,
         (unsigned long long)n, med, (double)bytes / med * 1e3, 0.0, 0.0);
  fflush(stdout);
}

int main(int argc, char **argv) {
  static const zv_bench_case_t cases[] = {
    ZV_BENCH(BuildMIME, bench_build) ZV_BENCH(BuildMIMEReuse, bench_build_reuse)
    ZV_BENCH(BuildMIMEAttachments, bench_build_attachments)};
  const char *filter = argc > 1 ? argv[1] : getenv("BENCH");
  zv_bench_main(argc, argv, cases, ZV_ARRAY_SIZE(cases));
  if (!filter || !*filter || strstr("Base64Encode", filter)) {
    run_throughput("Base64Encode", bench_base64, B64_IN);
  }
  if (!filter || !*filter || strstr("QuotedPrintableEncode", filter)) {
    run_throughput("QuotedPrintableEncode", bench_qp, B64_IN);
  }
  zv_mime_buf_free(&b64_out);
  return 0;
}
