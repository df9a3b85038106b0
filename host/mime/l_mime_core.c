/*
 * l_mime_core.c: the zever.mime_core binding. lua/zever/mime.lua and lua/zever/mailer.lua wrap
 * it; applications require those.
 *
 *   core.build(msg[, default_from[, max_bytes]])  -> bytes, envelope | nil, message, kind
 *   core.sink([path])                   -> sink | nil, message, "unavailable"
 *   sink:send_fields(from, to, cc, bcc, reply_to, subject, text, html, date, message_id,
 *                    headers, attachments[, default_from[, max_bytes]])
 *                                       -> message_id | nil, message, kind
 *   sink:close()
 *   sink:ptr()                          -> lightuserdata, for zv_mime_sink_send_flat (the FFI
 *                                          entry of lua/adapters/mailer/log.lua, below)
 *   core.parse_address(s)               -> email, name | nil, message, "invalid"
 *   core.check_address(s)               -> boolean
 *   core.base64(s), core.qp(s)          -> encoded string (the body encoders, for specs)
 *
 * Failures come as nil, message, kind: the order of every binding (runtime/lbind.h,
 * zv_l_failure). kind is "misuse" (a wrong type: the Lua wrapper raises it), "invalid" (a
 * refused message: bad address, CR/LF, size cap), "nomem", "unavailable" (the log file) or
 * "closed". envelope = { from = "a@b.c", to = { every To, Cc
 * and Bcc address once, in order, compared without case } }.
 *
 * A sink appends the log mailer's JSON line to a file (O_APPEND, one write per line, so lines
 * from several workers do not interleave) or to stderr. It keeps its message and line buffers
 * between sends: after the largest message has been seen, a send allocates nothing in C.
 *
 * The message table is read without copying: spans point into the Lua strings, which the
 * table keeps alive for the call. Lists of up to POOL_* entries live on the C stack; longer ones
 * in a userdata the GC owns, so nothing leaks when a Lua error unwinds. Nothing raises while
 * holding C memory: the reused buffers belong to userdata.
 */
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../core/zv.h"
#include "../runtime/lbind.h"
#include "mime.h"

#define STATE_MT "zever.mime_core.state"
#define SINK_MT "zever.mime_core.sink"
#define POOL_ADDRS 32
#define POOL_HEADERS 16
#define POOL_ATTACH 8

typedef struct {
  zv_mime_buf_t out; /* build()'s reused output */
  uint64_t seed, counter;
} state_t;

typedef struct zv_mime_sink_s {
  int fd;
  int own;
  zv_mime_buf_t msg, line;
  state_t *st; /* the module's state (the nonce counter); pinned by the sink metatable */
} sink_t;

enum { READ_OK, READ_MISUSE, READ_INVALID };

typedef struct {
  lua_State *L;
  zv_mime_msg_t m;
  zv_mime_addr_t addr_stack[POOL_ADDRS], *addrs;
  zv_mime_header_t header_stack[POOL_HEADERS], *headers;
  zv_mime_attachment_t attach_stack[POOL_ATTACH], *attachments;
  size_t naddrs;
  char misuse[200];
  zv_mime_cause_t cause;
} reader_t;

static const char *const list_fields[ZV_MIME_NLISTS] = {"from", "to", "cc", "bcc", "reply_to"};

/* The message's field names, interned once as upvalues of build and send (after the state, the
 * first upvalue): a lookup pushes the upvalue instead of hashing a C string per field per call,
 * which lua_getfield does. The first five are the address lists, in ZV_MIME_FROM.. order. */
enum {
  K_FROM, K_TO, K_CC, K_BCC, K_REPLY_TO, K_EMAIL, K_NAME, K_SUBJECT, K_TEXT, K_HTML, K_DATE,
  K_MESSAGE_ID, K_HEADERS, K_ATTACHMENTS, K_FILENAME, K_CONTENT_TYPE, K_DATA, NKEYS
};
static const char *const key_names[NKEYS] = {
  "from", "to", "cc", "bcc", "reply_to", "email", "name", "subject", "text", "html", "date",
  "message_id", "headers", "attachments", "filename", "content_type", "data"};

/* Pushes t[key] for the table at idx (metamethods honoured, as lua_getfield does). */
static void get_key(lua_State *L, int idx, int key) {
  if (idx < 0) idx = lua_gettop(L) + idx + 1;
  lua_pushvalue(L, lua_upvalueindex(2 + key));
  lua_gettable(L, idx);
}

static int misuse(reader_t *r, const char *fmt, const char *a, size_t i) {
  snprintf(r->misuse, sizeof r->misuse, fmt, a, i);
  return READ_MISUSE;
}

static void span_at(lua_State *L, int idx, zv_mime_str_t *out) {
  out->s = lua_tolstring(L, idx, &out->len);
}

/* Number of addresses the value at idx holds: a string or {name, email} is one; an array is
 * its length. -1 for a wrong type. */
static int count_addrs(lua_State *L, int idx) {
  int t = lua_type(L, idx);
  if (t == LUA_TNIL) return 0;
  if (t == LUA_TSTRING) return 1;
  if (t != LUA_TTABLE) return -1;
  get_key(L, idx, K_EMAIL);
  t = lua_type(L, -1);
  lua_pop(L, 1);
  if (t != LUA_TNIL) return 1;
  return (int)lua_objlen(L, idx);
}

/* Reads one address at idx into a. */
static int read_addr(reader_t *r, int idx, int list, size_t i, zv_mime_addr_t *a) {
  lua_State *L = r->L;
  a->name.s = NULL;
  a->name.len = 0;
  if (lua_type(L, idx) == LUA_TSTRING) {
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    int code;
    if (zv_mime_addr_parse(s, len, a, &code)) {
      r->cause.code = code;
      r->cause.field = ZV_MIME_FFROM + list;
      r->cause.index = i;
      return READ_INVALID;
    }
    if (i < 32) r->m.checked[list] |= 1u << i; /* validation need not scan it again */
    return READ_OK;
  }
  if (lua_type(L, idx) != LUA_TTABLE) {
    return misuse(r, "%s[%zu] must be an address string or {name = ..., email = ...}",
                  list_fields[list], i + 1);
  }
  get_key(L, idx, K_EMAIL);
  if (lua_type(L, -1) != LUA_TSTRING) {
    lua_pop(L, 1);
    return misuse(r, "%s[%zu].email must be a string", list_fields[list], i + 1);
  }
  span_at(L, -1, &a->email);
  lua_pop(L, 1);
  get_key(L, idx, K_NAME);
  if (lua_type(L, -1) == LUA_TSTRING) {
    span_at(L, -1, &a->name);
  } else if (!lua_isnil(L, -1)) {
    lua_pop(L, 1);
    return misuse(r, "%s[%zu].name must be a string", list_fields[list], i + 1);
  }
  lua_pop(L, 1);
  return READ_OK;
}

static int read_string(reader_t *r, int idx, int field, zv_mime_str_t *out) {
  lua_State *L = r->L;
  int t = lua_type(L, idx);
  out->s = NULL;
  out->len = 0;
  if (t == LUA_TSTRING) {
    span_at(L, idx, out);
  } else if (t != LUA_TNIL) {
    return misuse(r, "%s must be a string", key_names[field], 0);
  }
  return READ_OK;
}

static int header_cmp(const zv_mime_header_t *a, const zv_mime_header_t *b) {
  size_t n = a->name.len < b->name.len ? a->name.len : b->name.len;
  int c = memcmp(a->name.s, b->name.s, n);
  if (c) return c;
  return (a->name.len > b->name.len) - (a->name.len < b->name.len);
}

static int read_headers(reader_t *r, int value) {
  lua_State *L = r->L;
  int idx, rc = READ_OK;
  size_t n = 0, arr;
  lua_pushvalue(L, value);
  idx = lua_gettop(L);
  if (lua_isnil(L, idx)) goto done;
  if (!lua_istable(L, idx)) {
    rc = misuse(r, "%s must be a table", "headers", 0);
    goto done;
  }
  arr = lua_objlen(L, idx);
  if (arr == 0) {
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      lua_pop(L, 1);
      n++;
    }
  } else {
    n = arr;
  }
  if (n > POOL_HEADERS) r->headers = lua_newuserdata(L, n * sizeof *r->headers);
  if (arr) {
    /* { {"X-Name", "value"}, ... }: in order. */
    for (size_t i = 0; i < n; i++) {
      lua_rawgeti(L, idx, (int)i + 1);
      if (!lua_istable(L, -1)) {
        rc = misuse(r, "%s[%zu] must be a {name, value} pair", "headers", i + 1);
        goto done;
      }
      lua_rawgeti(L, -1, 1);
      lua_rawgeti(L, -2, 2);
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING) {
        rc = misuse(r, "%s[%zu] must be a {name, value} pair of strings", "headers", i + 1);
        goto done;
      }
      span_at(L, -2, &r->headers[i].name);
      span_at(L, -1, &r->headers[i].value);
      lua_pop(L, 3);
    }
  } else {
    /* { ["X-Name"] = "value" }: sorted by name, so the output does not depend on hashing. */
    size_t i = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
      if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING) {
        rc = misuse(r, "%s must map header names to string values", "headers", 0);
        goto done;
      }
      span_at(L, -2, &r->headers[i].name);
      span_at(L, -1, &r->headers[i].value);
      lua_pop(L, 1);
      for (size_t k = i; k > 0 && header_cmp(&r->headers[k - 1], &r->headers[k]) > 0; k--) {
        zv_mime_header_t t = r->headers[k];
        r->headers[k] = r->headers[k - 1];
        r->headers[k - 1] = t;
      }
      i++;
    }
  }
  r->m.headers = r->headers;
  r->m.nheaders = n;
done:
  /* The userdata (if any) stays on the stack until the call returns. */
  lua_remove(L, idx);
  return rc;
}

static int att_field(reader_t *r, int idx, int key, int pos, size_t i, zv_mime_str_t *out) {
  lua_State *L = r->L;
  const char *name = key_names[key];
  get_key(L, idx, key);
  if (lua_isnil(L, -1)) {
    lua_pop(L, 1);
    lua_rawgeti(L, idx, pos);
  }
  out->s = NULL;
  out->len = 0;
  if (lua_type(L, -1) == LUA_TSTRING) {
    span_at(L, -1, out);
  } else if (!lua_isnil(L, -1)) {
    lua_pop(L, 1);
    snprintf(r->misuse, sizeof r->misuse, "attachments[%zu].%s must be a string", i + 1, name);
    return READ_MISUSE;
  }
  lua_pop(L, 1);
  return READ_OK;
}

static int read_attachments(reader_t *r, int value) {
  lua_State *L = r->L;
  int idx, rc = READ_OK;
  size_t n;
  int keep = 0;
  lua_pushvalue(L, value);
  idx = lua_gettop(L);
  if (lua_isnil(L, idx)) goto done;
  if (!lua_istable(L, idx)) {
    rc = misuse(r, "%s must be an array of {filename, content_type, data}", "attachments", 0);
    goto done;
  }
  n = lua_objlen(L, idx);
  if (n > POOL_ATTACH) {
    r->attachments = lua_newuserdata(L, n * sizeof *r->attachments);
    keep = 1;
  }
  for (size_t i = 0; i < n; i++) {
    zv_mime_attachment_t *a = &r->attachments[i];
    int at;
    lua_rawgeti(L, idx, (int)i + 1);
    at = lua_gettop(L);
    if (!lua_istable(L, at)) {
      rc = misuse(r, "%s[%zu] must be a table {filename, content_type, data}", "attachments", i + 1);
      goto done;
    }
    if ((rc = att_field(r, at, K_FILENAME, 1, i, &a->filename)) ||
        (rc = att_field(r, at, K_CONTENT_TYPE, 2, i, &a->content_type)) ||
        (rc = att_field(r, at, K_DATA, 3, i, &a->data)))
      goto done;
    if (!a->data.s) {
      rc = misuse(r, "%s[%zu].data must be a string", "attachments", i + 1);
      goto done;
    }
    lua_pop(L, 1);
  }
  r->m.attachments = r->attachments;
  r->m.nattachments = n;
done:
  lua_settop(L, idx + keep); /* the userdata (if any) stays until the call returns */
  lua_remove(L, idx);
  return rc;
}

/* The message's fields in the order send_fields takes them (and read_msg pushes them). */
enum {
  F_FROM, F_TO, F_CC, F_BCC, F_REPLY_TO, F_SUBJECT, F_TEXT, F_HTML, F_DATE, F_MESSAGE_ID,
  F_HEADERS, F_ATTACHMENTS, NFIELDS
};
static const int field_key[NFIELDS] = {
  K_FROM, K_TO, K_CC, K_BCC, K_REPLY_TO, K_SUBJECT, K_TEXT, K_HTML, K_DATE, K_MESSAGE_ID,
  K_HEADERS, K_ATTACHMENTS};

/* Reads a message whose fields sit at stack slots base + F_* (and the default From at index
 * dfrom, 0 for none). */
static int read_fields(reader_t *r, int base, int dfrom) {
  lua_State *L = r->L;
  int counts[ZV_MIME_NLISTS], rc;
  size_t total = 0, used = 0;
  memset(&r->m, 0, sizeof r->m);
  memset(&r->cause, 0, sizeof r->cause);
  r->addrs = r->addr_stack;
  r->headers = r->header_stack;
  r->attachments = r->attach_stack;
  r->misuse[0] = '\0';
  if (dfrom && lua_isnil(L, base + F_FROM)) {
    lua_pushvalue(L, dfrom);
    lua_replace(L, base + F_FROM);
  }
  for (int l = 0; l < ZV_MIME_NLISTS; l++) {
    int idx = base + F_FROM + l;
    counts[l] = count_addrs(L, idx);
    if (counts[l] < 0) {
      return misuse(r, "%s must be an address, {name = ..., email = ...} or a list of them",
                    list_fields[l], 0);
    }
    if (l == ZV_MIME_FROM && lua_istable(L, idx) && counts[l] != 1) {
      return misuse(r, "%s must be one address, not a list", "from", 0);
    }
    total += (size_t)counts[l];
  }
  if (total > POOL_ADDRS) {
    r->addrs = lua_newuserdata(L, total * sizeof *r->addrs); /* stays on the stack */
  }
  for (int l = 0; l < ZV_MIME_NLISTS; l++) {
    int idx = base + F_FROM + l;
    r->m.addrs[l] = r->addrs + used;
    r->m.naddrs[l] = (size_t)counts[l];
    if (lua_type(L, idx) == LUA_TSTRING || counts[l] == 1) {
      /* a single address, or an array of one */
      int single = lua_type(L, idx) == LUA_TSTRING;
      if (!single) {
        get_key(L, idx, K_EMAIL);
        single = !lua_isnil(L, -1);
        lua_pop(L, 1);
      }
      if (single) {
        rc = read_addr(r, idx, l, 0, &r->addrs[used]);
        if (rc) return rc;
        used++;
        continue;
      }
    }
    for (int i = 0; i < counts[l]; i++) {
      lua_rawgeti(L, idx, i + 1);
      if (lua_type(L, -1) == LUA_TTABLE) {
        get_key(L, -1, K_EMAIL);
        int has = !lua_isnil(L, -1);
        lua_pop(L, 1);
        if (!has) return misuse(r, "%s[%zu] must be an address string or {name = ..., email = ...}",
                                list_fields[l], (size_t)i + 1);
      }
      rc = read_addr(r, lua_gettop(L), l, (size_t)i, &r->addrs[used]);
      if (rc) return rc;
      used++;
      lua_pop(L, 1);
    }
  }
  if ((rc = read_string(r, base + F_SUBJECT, K_SUBJECT, &r->m.subject)) ||
      (rc = read_string(r, base + F_TEXT, K_TEXT, &r->m.text)) ||
      (rc = read_string(r, base + F_HTML, K_HTML, &r->m.html)) ||
      (rc = read_string(r, base + F_DATE, K_DATE, &r->m.date)) ||
      (rc = read_string(r, base + F_MESSAGE_ID, K_MESSAGE_ID, &r->m.message_id)))
    return rc;
  if ((rc = read_headers(r, base + F_HEADERS))) return rc;
  return read_attachments(r, base + F_ATTACHMENTS);
}

/* Reads the message table at index msg: pushes its fields (they stay on the stack for the
 * call, which keeps the spans alive), then reads them. */
static int read_msg(reader_t *r, int msg, int dfrom) {
  lua_State *L = r->L;
  int base;
  if (!lua_istable(L, msg)) {
    r->misuse[0] = '\0';
    return misuse(r, "%s must be a table", "the message", 0);
  }
  base = lua_gettop(L) + 1;
  for (int f = 0; f < NFIELDS; f++) get_key(L, msg, field_key[f]);
  return read_fields(r, base, dfrom);
}

static state_t *state_of(lua_State *L) {
  return (state_t *)lua_touserdata(L, lua_upvalueindex(1));
}

static void stamp(state_t *st, zv_mime_msg_t *m) {
  m->now = (int64_t)time(NULL);
  m->nonce = st->seed + st->counter++;
}

static int push_failure(lua_State *L, reader_t *r, int rc) {
  char text[256];
  if (rc == READ_MISUSE) return zv_l_failure(L, r->misuse, "misuse");
  if (rc == ZV_ENOMEM) return zv_l_failure(L, "out of memory", "nomem");
  zv_mime_cause_text(&r->cause, text, sizeof text);
  return zv_l_failure(L, text, "invalid");
}

static size_t opt_max(lua_State *L, int idx) {
  lua_Number n = luaL_optnumber(L, idx, 0);
  return n > 0 ? (size_t)n : 0;
}

static int ascii_ieq(const zv_mime_str_t *a, const zv_mime_str_t *b) {
  if (a->len != b->len) return 0;
  for (size_t i = 0; i < a->len; i++) {
    unsigned char x = (unsigned char)a->s[i], y = (unsigned char)b->s[i];
    if (x >= 'A' && x <= 'Z') x = (unsigned char)(x + 32);
    if (y >= 'A' && y <= 'Z') y = (unsigned char)(y + 32);
    if (x != y) return 0;
  }
  return 1;
}

static void push_envelope(lua_State *L, const zv_mime_msg_t *m) {
  static const int lists[] = {ZV_MIME_TO, ZV_MIME_CC, ZV_MIME_BCC};
  int n = 0;
  lua_createtable(L, 0, 2);
  lua_pushlstring(L, m->addrs[ZV_MIME_FROM][0].email.s, m->addrs[ZV_MIME_FROM][0].email.len);
  lua_setfield(L, -2, "from");
  lua_newtable(L);
  for (int k = 0; k < 3; k++) {
    int l = lists[k];
    for (size_t i = 0; i < m->naddrs[l]; i++) {
      const zv_mime_str_t *e = &m->addrs[l][i].email;
      int seen = 0;
      for (int k2 = 0; k2 <= k && !seen; k2++) {
        int l2 = lists[k2];
        size_t upto = k2 == k ? i : m->naddrs[l2];
        for (size_t j = 0; j < upto && !seen; j++) seen = ascii_ieq(e, &m->addrs[l2][j].email);
      }
      if (seen) continue;
      lua_pushlstring(L, e->s, e->len);
      lua_rawseti(L, -2, ++n);
    }
  }
  lua_setfield(L, -2, "to");
}

static int l_build(lua_State *L) {
  state_t *st = state_of(L);
  reader_t r;
  zv_mime_info_t info;
  int rc;
  lua_settop(L, 3);
  r.L = L;
  rc = read_msg(&r, 1, lua_isnil(L, 2) ? 0 : 2);
  if (rc) return push_failure(L, &r, rc);
  stamp(st, &r.m);
  r.m.max_bytes = opt_max(L, 3);
  st->out.len = 0;
  st->out.err = 0;
  rc = zv_mime_build(&r.m, &st->out, &info, &r.cause);
  if (rc) return push_failure(L, &r, rc);
  lua_pushlstring(L, st->out.p, st->out.len);
  push_envelope(L, &r.m);
  /* Do not keep a huge buffer around after an unusually large message. */
  if (st->out.cap > 1024 * 1024) zv_mime_buf_free(&st->out);
  return 2;
}

/* --- the log sink ----------------------------------------------------------------------- */

static int l_sink(lua_State *L) {
  const char *path = luaL_optstring(L, 1, "");
  sink_t *s = lua_newuserdata(L, sizeof *s);
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->st = state_of(L);
  luaL_getmetatable(L, SINK_MT);
  lua_setmetatable(L, -2);
  if (*path == '\0') {
    s->fd = 2;
    s->own = 0;
    return 1;
  }
  s->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (s->fd < 0) {
    int e = errno;
    lua_pushfstring(L, "cannot open %s: %s", path, strerror(e));
    return zv_l_failure(L, lua_tostring(L, -1), "unavailable");
  }
  s->own = 1;
  return 1;
}

static sink_t *check_sink(lua_State *L) {
  return (sink_t *)luaL_checkudata(L, 1, SINK_MT);
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Renders the log line of the message r has read and writes it; pushes the results. */
static int sink_deliver(lua_State *L, sink_t *s, reader_t *r, int max_idx) {
  state_t *st = state_of(L);
  zv_mime_info_t info;
  int rc;
  stamp(st, &r->m);
  r->m.max_bytes = opt_max(L, max_idx);
  s->msg.len = 0;
  s->msg.err = 0;
  s->line.len = 0;
  s->line.err = 0;
  rc = zv_mime_build_headers(&r->m, &s->msg, &info, &r->cause);
  if (rc) return push_failure(L, r, rc);
  zv_mime_log_line(&s->line, &r->m, &s->msg, &info);
  if (s->line.err) return push_failure(L, r, s->line.err);
  if (write_all(s->fd, s->line.p, s->line.len)) {
    lua_pushfstring(L, "cannot write the mail log: %s", strerror(errno));
    return zv_l_failure(L, lua_tostring(L, -1), "unavailable");
  }
  lua_pushlstring(L, s->msg.p + info.msgid_at, info.msgid_len);
  /* A rare huge message must not pin its buffers for the life of the worker. */
  if (s->msg.cap > 1024 * 1024) zv_mime_buf_free(&s->msg);
  if (s->line.cap > 1024 * 1024) zv_mime_buf_free(&s->line);
  return 1;
}

static int push_closed(lua_State *L) {
  return zv_l_failure(L, "the mailer is closed", "closed");
}

/* sink:send_fields(from, to, cc, bcc, reply_to, subject, text, html, date, message_id,
 * headers, attachments, default_from, max_bytes): send with the message's fields as
 * arguments. The log adapter reads them in Lua (JIT-compiled field loads), which saves the
 * table lookups through the C API that most of a send's reading cost. */
static int l_sink_send_fields(lua_State *L) {
  sink_t *s = check_sink(L);
  reader_t r;
  int rc;
  lua_settop(L, 2 + NFIELDS + 1);
  if (s->fd < 0) return push_closed(L);
  r.L = L;
  rc = read_fields(&r, 2, lua_isnil(L, 2 + NFIELDS) ? 0 : 2 + NFIELDS);
  if (rc) return push_failure(L, &r, rc);
  return sink_deliver(L, s, &r, 2 + NFIELDS + 1);
}

/* sink:ptr() -> lightuserdata: the sink for zv_mime_sink_send_flat (the caller keeps the sink
 * referenced while it uses the pointer). */
static int l_sink_ptr(lua_State *L) {
  lua_pushlightuserdata(L, check_sink(L));
  return 1;
}

/* The FFI entry of the log adapter: mime_ffi.h says what it does. */
int zv_mime_sink_send_flat(zv_mime_sink_t *sink, const zv_mime_flat_addr_t *in,
                           const int *counts, const zv_mime_str_t *fields, double max_bytes,
                           zv_mime_str_t *id) {
  sink_t *s = sink;
  zv_mime_addr_t addrs[POOL_ADDRS];
  zv_mime_msg_t m;
  zv_mime_info_t info;
  zv_mime_cause_t cause;
  size_t k = 0;
  if (s->fd < 0) return -1;
  /* A rare huge message's buffers are let go here, at the next send: the last Message-ID
   * points into them until then. */
  if (s->msg.cap > 1024 * 1024) zv_mime_buf_free(&s->msg);
  if (s->line.cap > 1024 * 1024) zv_mime_buf_free(&s->line);
  memset(&m, 0, sizeof m);
  for (int l = 0; l < ZV_MIME_NLISTS; l++) {
    int n = counts[l];
    if (n < 0 || (size_t)n > POOL_ADDRS - k) return -1;
    m.addrs[l] = addrs + k;
    m.naddrs[l] = (size_t)n;
    for (int i = 0; i < n; i++, k++) {
      if (in[k].parse) {
        int code;
        if (!in[k].email.s || zv_mime_addr_parse(in[k].email.s, in[k].email.len, &addrs[k], &code))
          return -1;
        if (i < 32) m.checked[l] |= 1u << i;
      } else {
        addrs[k].name = in[k].name;
        addrs[k].email = in[k].email;
      }
    }
  }
  m.subject = fields[0];
  m.text = fields[1];
  m.html = fields[2];
  m.date = fields[3];
  m.message_id = fields[4];
  m.max_bytes = max_bytes > 0 ? (max_bytes < 1e18 ? (size_t)max_bytes : (size_t)1e18) : 0;
  stamp(s->st, &m);
  s->msg.len = 0;
  s->msg.err = 0;
  s->line.len = 0;
  s->line.err = 0;
  if (zv_mime_build_headers(&m, &s->msg, &info, &cause)) return -1;
  zv_mime_log_line(&s->line, &m, &s->msg, &info);
  if (s->line.err) return -1;
  if (write_all(s->fd, s->line.p, s->line.len)) return errno > 0 ? errno : EIO;
  id->s = s->msg.p + info.msgid_at;
  id->len = info.msgid_len;
  return 0;
}

static int l_sink_close(lua_State *L) {
  sink_t *s = check_sink(L);
  if (s->own && s->fd >= 0) close(s->fd);
  s->fd = -1;
  zv_mime_buf_free(&s->msg);
  zv_mime_buf_free(&s->line);
  return 0;
}

static int l_state_gc(lua_State *L) {
  state_t *st = (state_t *)luaL_checkudata(L, 1, STATE_MT);
  zv_mime_buf_free(&st->out);
  return 0;
}

/* --- small helpers for specs -------------------------------------------------------------- */

static int l_parse_address(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  zv_mime_addr_t a;
  int code;
  if (zv_mime_addr_parse(s, len, &a, &code)) {
    zv_mime_cause_t c = {code, ZV_MIME_FMESSAGE, 0, NULL};
    char text[160];
    zv_mime_cause_text(&c, text, sizeof text);
    return zv_l_failure(L, text + 8, "invalid"); /* without "message " */
  }
  lua_pushlstring(L, a.email.s, a.email.len);
  if (a.name.s) {
    lua_pushlstring(L, a.name.s, a.name.len);
  } else {
    lua_pushnil(L);
  }
  return 2;
}

static int l_check_address(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  lua_pushboolean(L, zv_mime_addr_check(s, len) == 0);
  return 1;
}

static int encode_with(lua_State *L, void (*fn)(zv_mime_buf_t *, const void *, size_t)) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  state_t *st = state_of(L);
  st->out.len = 0;
  st->out.err = 0;
  fn(&st->out, s, len);
  if (st->out.err) return luaL_error(L, "out of memory");
  lua_pushlstring(L, st->out.p ? st->out.p : "", st->out.len);
  return 1;
}

static int l_base64(lua_State *L) {
  return encode_with(L, zv_mime_base64);
}

static int l_qp(lua_State *L) {
  return encode_with(L, zv_mime_qp);
}

static uint64_t seed64(void) {
  uint64_t v = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
    close(fd);
  }
  if (v == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    v = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^ (uint64_t)ts.tv_sec;
  }
  return v;
}

/* Sets t[name] (t on the top) to fn with the state and the interned keys as upvalues. */
static void set_closure(lua_State *L, int state, const char *name, lua_CFunction fn) {
  lua_pushvalue(L, state);
  for (int k = 0; k < NKEYS; k++) lua_pushstring(L, key_names[k]);
  lua_pushcclosure(L, fn, 1 + NKEYS);
  lua_setfield(L, -2, name);
}

int luaopen_zever_mime_core(lua_State *L);
int luaopen_zever_mime_core(lua_State *L) {
  state_t *st;
  int state;
  st = lua_newuserdata(L, sizeof *st);
  memset(st, 0, sizeof *st);
  st->seed = seed64();
  state = lua_gettop(L);
  luaL_newmetatable(L, STATE_MT);
  lua_pushcfunction(L, l_state_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, state);

  luaL_newmetatable(L, SINK_MT);
  lua_newtable(L);
  set_closure(L, state, "send_fields", l_sink_send_fields);
  set_closure(L, state, "close", l_sink_close);
  set_closure(L, state, "ptr", l_sink_ptr);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, l_sink_close);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);

  lua_newtable(L);
  set_closure(L, state, "build", l_build);
  set_closure(L, state, "base64", l_base64);
  set_closure(L, state, "qp", l_qp);
  set_closure(L, state, "sink", l_sink);
  lua_pushcfunction(L, l_parse_address);
  lua_setfield(L, -2, "parse_address");
  lua_pushcfunction(L, l_check_address);
  lua_setfield(L, -2, "check_address");
  lua_pushinteger(L, ZV_MIME_MAX_BYTES);
  lua_setfield(L, -2, "MAX_BYTES");
  return 1;
}
