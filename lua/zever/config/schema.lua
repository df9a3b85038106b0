-- zever.config.schema: the one table that says what zever.yaml may contain: every section, its
-- fields, their types and their zero-infrastructure defaults. docs/config.md mirrors it; the
-- loader, the environment overlay, validation, `zever config show` and the container all read
-- it, so a field added here is known everywhere. It must not read files or the environment.
--
-- A field is { name, type, default, values = {...} (enum), min = n, relative = kind, secret = true,
-- doc = "..." }; secret = true hides its value in `config show` and in messages whatever its name.
-- relative says the value names a file: "file" (a relative path is relative to the app folder,
-- never to the current directory) or "dsn" (the same for the file of a sqlite: DSN).
-- A section with free = true (app) has no fields: it takes any keys and values.
-- Types:
--   string    a string
--   integer   a whole number (min, when given, is inclusive)
--   number    any number
--   boolean   true or false (the environment also takes 1/0, yes/no, on/off)
--   duration  stored as seconds (a number); written as "30s", "1h30m", "PT30S", "P1D" or
--             integer nanoseconds (zever.duration)
--   enum      a string from values
--   adapter   an enum whose values are the battery's adapter names
--
-- sections is an array (the order of `config show` and of the docs); by_name indexes it, and
-- section.by_name indexes its fields.

local M = {}

-- Each field is made at its full size (its keys, those of extra, and section / path / env the
-- loop at the end adds), so that it never grows: this file runs in every Lua state that reads
-- the configuration, each worker's included (start-up cost).
local tnew = require "table.new"
local function f(name, type_, default, extra)
  local field = tnew(0, 11)
  if extra then
    for k, v in pairs(extra) do field[k] = v end
  end
  field.name, field.type, field.default = name, type_, default
  return field
end

local MiB = 1024 * 1024

M.sections = {
  { name = "http", doc = "the HTTP server of `zever serve`", fields = {
    f("listen", "string", "127.0.0.1:8080", { doc = "host:port to bind (SO_REUSEPORT per worker)" }),
    f("workers", "integer", 0, { min = 0, doc = "worker threads; 0 = CPU count" }),
    f("app", "string", "app.lua", { relative = "file", doc = "the file `zever serve` loads" }),
    f("views", "string", "views", { relative = "file", doc = "the folder of the templates (res:render)" }),
    f("access_log", "enum", "text", { values = { "off", "text", "json" }, doc = "access log format" }),
    f("health", "boolean", false, { doc = "add GET /healthz and /readyz (app:health())" }),
    f("metrics", "boolean", false,
      { doc = "add GET /metrics and the built-in HTTP metrics (app:metrics(); docs/observability.md)" }),
    f("drain", "duration", 10, { doc = "how long in-flight requests may finish on shutdown" }),
    f("max_header_bytes", "integer", 8192, { min = 1, doc = "request line + headers (431/414)" }),
    f("max_body_bytes", "integer", MiB, { min = 0, doc = "request body (413)" }),
    f("max_stream_bytes", "integer", 1024 * MiB,
      { min = 0, doc = "request body of a stream_body route without max_body (413)" }),
    f("header_timeout", "duration", 10, { doc = "time to read the headers (408)" }),
    f("body_timeout", "duration", 30, { doc = "time to read the body (408)" }),
    f("keepalive_timeout", "duration", 75, { doc = "idle time between requests" }),
    f("write_timeout", "duration", 60, { doc = "no write progress this long closes the connection" }),
    f("handler_timeout", "duration", 60,
      { doc = "a handler unanswered this long: 503 (yielding) or 500 (CPU loop); 0 = none" }),
    f("max_connections", "integer", 10000, { min = 1, doc = "open connections per worker" }),
    f("tls_cert", "string", "", { relative = "file",
      doc = "TLS: PEM certificate (and chain); set with tls_key to serve HTTPS (docs/tls.md)" }),
    f("tls_key", "string", "", { relative = "file", doc = "TLS: PEM private key (unencrypted)" }),
    f("tls_min_version", "enum", "1.2", { values = { "1.2", "1.3" }, doc = "TLS: lowest version" }),
    f("tls_ciphers", "string", "", { doc = "TLS: OpenSSL cipher list for TLS 1.2; empty = OpenSSL's" }),
    f("tls_alpn", "string", "http/1.1", { doc = "TLS: ALPN protocols offered, comma-separated" }),
    f("h2", "boolean", false,
      { doc = "HTTP/2 too: h2 by ALPN with TLS, h2c with prior knowledge without (docs/http2.md)" }),
    f("tls_redirect", "string", "",
      { doc = "TLS: host:port of a plain-HTTP listener that redirects to HTTPS" }),
    f("tls_ocsp", "string", "", { relative = "file",
      doc = "TLS: a DER OCSP response to staple (refreshed on SIGHUP; docs/tls.md)" }),
    f("ws_deflate", "boolean", false, { doc = "WebSockets: negotiate permessage-deflate on "
      .. "every app:websocket route without its own deflate option (docs/websockets.md)" }),
  } },
  { name = "redis", doc = "the Redis server every redis adapter uses unless its battery sets url",
    fields = {
      f("url", "string", "redis://127.0.0.1:6379/0", { doc = "redis://[:password@]host:port/db" }),
      f("timeout", "duration", 5, { doc = "connect and command timeout" }),
    } },
  { name = "db", doc = "the database", fields = {
    f("adapter", "adapter", "sqlite", { values = { "sqlite", "postgres" } }),
    f("dsn", "string", "sqlite:app.db", { relative = "dsn",
      doc = "sqlite:app.db, sqlite::memory:, postgres://..." }),
    f("busy_timeout", "duration", 5, { doc = "SQLite: wait this long for a lock" }),
    f("pool_size", "integer", 10, { min = 1, doc = "PostgreSQL: connections per worker" }),
    f("idle_timeout", "duration", 300, { doc = "PostgreSQL: close a connection idle this long; 0 = never" }),
    f("max_lifetime", "duration", 3600, { doc = "PostgreSQL: replace a connection this old; 0 = never" }),
    f("connect_timeout", "duration", 10, { doc = "PostgreSQL: give up a connect after this long" }),
    f("statement_timeout", "duration", 0,
      { doc = "PostgreSQL: the server cancels a statement after this long (timeout); 0 = none" }),
    f("migrations", "string", "migrations", { relative = "file", doc = "the folder of `zever migrate`" }),
  } },
  { name = "cache", doc = "the cache battery", fields = {
    f("adapter", "adapter", "memory", { values = { "memory", "db", "redis" } }),
    f("url", "string", "", { doc = "redis adapter: overrides redis.url" }),
    f("ttl_default", "duration", 0, { doc = "TTL when set() gets none; 0 = no expiry" }),
    f("max_bytes", "integer", 64 * MiB, { min = 1, doc = "memory adapter: byte budget (LRU)" }),
    f("prefix", "string", "", { doc = "key prefix (db; redis: empty means zever:cache:)" }),
    f("table", "string", "cache_entries", { doc = "db adapter: the table (created if missing)" }),
  } },
  { name = "queue", doc = "the queue battery", fields = {
    f("adapter", "adapter", "db", { values = { "memory", "db", "redis" } }),
    f("url", "string", "", { doc = "redis adapter: overrides redis.url" }),
    f("visibility_timeout", "duration", 30, { doc = "lease of a popped message" }),
    f("sweep_interval", "duration", 30, { doc = "db adapter: stale-lease reclaim period" }),
    f("poll_max", "duration", 1, { doc = "cap of the empty-poll backoff" }),
    f("sweep_batch", "integer", 100, { min = 1, doc = "db adapter: leases reclaimed per sweep" }),
    f("table", "string", "queue_messages", { doc = "db adapter: the table (created if missing)" }),
    f("prefetch", "integer", 0, { min = 0,
      doc = "db adapter: rows one claim takes (at most 1000); 0 = 8 on PostgreSQL, 1 on SQLite" }),
  } },
  { name = "jobs", doc = "background jobs over the queue", fields = {
    f("adapter", "adapter", "queue", { values = { "queue" } }),
    f("queue", "string", "default", { doc = "default queue name" }),
    f("concurrency", "integer", 1, { min = 1, doc = "jobs run at once per worker" }),
    f("attempts", "integer", 3, { min = 1, doc = "tries before the dead letter" }),
    f("backoff_base", "duration", 10, { doc = "first retry delay (doubles)" }),
    f("backoff_cap", "duration", 600, { doc = "longest retry delay" }),
    f("backoff_jitter", "boolean", true, { doc = "randomise retry delays" }),
    f("timeout", "duration", 0, { doc = "a handler's time limit; 0 = queue.visibility_timeout" }),
    f("drain", "duration", 10, { doc = "`zever worker`: running jobs' deadline on SIGTERM" }),
    f("failed_table", "string", "failed_jobs", { doc = "dead letters (created if missing)" }),
  } },
  { name = "scheduler", doc = "cron and every(); adapter is the one-run-per-slot lock", fields = {
    f("adapter", "adapter", "memory", { values = { "memory", "db", "redis" } }),
    f("url", "string", "", { doc = "redis adapter: overrides redis.url" }),
    f("timezone", "enum", "UTC", { values = { "UTC", "local" },
      doc = "cron slots in UTC (local is not supported yet: resolving raises)" }),
    f("tick", "duration", 0.1, { doc = "how often `zever worker` checks for due slots" }),
    f("horizon", "duration", 86400, { doc = "db adapter: lock rows older than this are deleted" }),
    f("table", "string", "scheduler_locks", { doc = "db adapter: the lock table" }),
  } },
  { name = "mailer", doc = "outgoing mail", fields = {
    f("adapter", "adapter", "log", { values = { "log", "smtp" } }),
    f("from", "string", "", { doc = "default From address" }),
    f("max_bytes", "integer", 10 * MiB, { min = 1, doc = "size cap of a rendered message" }),
    f("log_file", "string", "", { relative = "file",
      doc = "log adapter: append JSON lines here; empty = stderr" }),
    f("smtp_host", "string", "localhost"),
    f("smtp_port", "integer", 587, { min = 1 }),
    f("smtp_username", "string", ""),
    f("smtp_password", "string", ""),
    f("smtp_tls", "enum", "starttls", { values = { "starttls", "tls", "none" } }),
    f("smtp_ca_file", "string", "", { relative = "file",
      doc = "PEM file of trusted CAs; empty = the system's" }),
    f("smtp_helo", "string", "localhost", { doc = "the name sent with EHLO" }),
    f("timeout", "duration", 10, { doc = "SMTP connect and command timeout" }),
  } },
  { name = "limiter", doc = "token-bucket rate limiter", fields = {
    f("adapter", "adapter", "memory", { values = { "memory", "redis" } }),
    f("url", "string", "", { doc = "redis adapter: overrides redis.url" }),
    f("rate", "number", 10, { min = 0, doc = "tokens per second" }),
    f("burst", "integer", 20, { min = 1, doc = "bucket size" }),
    f("max_keys", "integer", 100000, { min = 1, doc = "memory adapter: table bound" }),
    f("idle_ttl", "duration", 600, { doc = "memory adapter: evict idle keys after" }),
  } },
  { name = "idempotency", doc = "Idempotency-Key storage", fields = {
    f("adapter", "adapter", "memory", { values = { "memory", "db", "redis" } }),
    f("url", "string", "", { doc = "redis adapter: overrides redis.url" }),
    f("ttl", "duration", 86400, { doc = "how long a stored response is replayed" }),
    f("pending_ttl", "duration", 60, { doc = "how long an unfinished request holds its key" }),
    f("max_keys", "integer", 100000, { min = 1, doc = "memory adapter: table bound" }),
    f("max_bytes", "integer", 64 * MiB, { min = 1, doc = "memory adapter: byte budget (LRU)" }),
  } },
  { name = "search", doc = "full-text search", fields = {
    f("adapter", "adapter", "db", { values = { "db" } }),
    f("fts", "string", "unicode61 remove_diacritics 2", { doc = "SQLite FTS5 tokenize= argument" }),
  } },
  { name = "vectors", doc = "vector similarity search", fields = {
    f("adapter", "adapter", "db", { values = { "db" } }),
    f("dimensions", "integer", 0, { min = 0, doc = "0 = set by the first upsert" }),
    f("index", "boolean", false, { doc = "build the approximate (IVF-flat) index" }),
    f("nlist", "integer", 0, { min = 0, doc = "index lists; 0 = sqrt(rows)" }),
    f("nprobe", "integer", 0, { min = 0, doc = "lists a query scans; 0 = nlist / 12" }),
    f("index_min_rows", "integer", 10000, { min = 1, doc = "below this, queries scan exactly" }),
  } },
  { name = "crypto", doc = "keys for encryption and signing (cookies, sessions)", fields = {
    f("adapter", "adapter", "local", { values = { "local" } }),
    f("keys", "string", "", { secret = true, doc = '"id:base64key,..." (32 bytes each); the first ' ..
      "encrypts and signs, all decrypt and verify; empty = an ephemeral key per process" }),
  } },
  { name = "session", doc = "sessions (zever.middleware.session, req.session)", fields = {
    f("adapter", "adapter", "memory", { values = { "memory", "db", "redis", "cookie" } }),
    f("url", "string", "", { doc = "redis adapter: overrides redis.url" }),
    f("prefix", "string", "", { doc = "redis adapter: key prefix; empty means zever:session:" }),
    f("table", "string", "sessions", { doc = "db adapter: the table (created if missing)" }),
    f("max_bytes", "integer", 64 * MiB, { min = 1, doc = "memory adapter: byte budget (LRU)" }),
    f("idle_timeout", "duration", 7200, { doc = "a session unused this long is gone" }),
    f("absolute_timeout", "duration", 86400, { doc = "a session older than this is gone" }),
    f("cookie_name", "string", "zever_session", { doc = "the session cookie's name" }),
    f("path", "string", "/", { doc = "the session cookie's Path" }),
    f("domain", "string", "", { doc = "the session cookie's Domain; empty = this host only" }),
    f("secure", "boolean", false, { doc = "Secure session cookie (set true behind HTTPS)" }),
    f("same_site", "enum", "lax", { values = { "lax", "strict", "none" },
      doc = "the session cookie's SameSite" }),
  } },
  { name = "password", doc = "password hashing (argon2id)", fields = {
    f("adapter", "adapter", "argon2id", { values = { "argon2id" } }),
    f("memory_kib", "integer", 19456, { min = 8, doc = "argon2 memory per hash, KiB (OWASP: 19 MiB)" }),
    f("iterations", "integer", 2, { min = 1, doc = "argon2 passes (OWASP: 2)" }),
    f("parallelism", "integer", 1, { min = 1, doc = "argon2 lanes (OWASP: 1)" }),
    f("hash_length", "integer", 32, { min = 16, doc = "tag bytes" }),
    f("salt_length", "integer", 16, { min = 8, doc = "random salt bytes" }),
  } },
  { name = "auth", doc = "authentication (JWT or opaque tokens on the session store)", fields = {
    f("adapter", "adapter", "jwt", { values = { "jwt", "session" } }),
    f("algorithm", "enum", "HS256", { values = { "HS256", "HS384", "HS512", "EdDSA", "ES256" },
      doc = "jwt: the one algorithm tokens must use" }),
    f("secret", "string", "", { doc = "jwt HS*: >= 32 bytes; empty = derived from crypto.keys" }),
    f("private_key_file", "string", "", { relative = "file", doc = "jwt EdDSA/ES256: PEM, signs" }),
    f("public_key_file", "string", "", { relative = "file", doc = "jwt EdDSA/ES256: PEM, verifies" }),
    f("issuer", "string", "", { doc = "jwt: iss written and required; empty = none" }),
    f("audience", "string", "", { doc = "jwt: aud written and required; empty = none" }),
    f("ttl", "duration", 3600, { doc = "lifetime of an issued token" }),
    f("leeway", "duration", 60, { doc = "jwt: clock skew allowed on exp, nbf, iat" }),
    f("revocation", "boolean", true, { doc = "jwt: keep revoked ids on the cache battery" }),
    f("realm", "string", "zever", { doc = "the realm of WWW-Authenticate" }),
  } },
  { name = "log", doc = "the application log", fields = {
    f("adapter", "adapter", "text", { values = { "text", "json" } }),
    f("level", "enum", "info", { values = { "debug", "info", "warn", "error", "off" } }),
  } },
  { name = "lock", doc = "leases on a key with fencing tokens (app.lock)", fields = {
    f("adapter", "adapter", "memory", { values = { "memory", "db", "redis", "postgres" } }),
    f("url", "string", "", { doc = "redis adapter: overrides redis.url" }),
    f("prefix", "string", "zever:lock:", { doc = "redis and postgres adapters: key prefix" }),
    f("sequence", "string", "zever_lock_fence",
      { doc = "postgres adapter: the sequence fences come from" }),
    f("table", "string", "lock_leases", { doc = "db adapter: the lease table" }),
    f("horizon", "duration", 86400, { doc = "db adapter: free rows are deleted after" }),
    f("timeout", "duration", 10, { doc = "how long acquire waits by default" }),
    f("max_wait", "duration", 0.05, { doc = "the cap of acquire's backoff between tries" }),
  } },
  { name = "eventbus", doc = "publish/subscribe on topics (app.eventbus)", fields = {
    f("adapter", "adapter", "memory", { values = { "memory", "inproc", "redis", "postgres" } }),
    f("url", "string", "", { doc = "redis adapter: overrides redis.url" }),
    f("prefix", "string", "zever:eventbus:", { doc = "redis adapter: key prefix of the stream" }),
    f("maxlen", "integer", 10000, { min = 1, doc = "redis adapter: messages the stream keeps" }),
    f("channel", "string", "zever_events", { doc = "postgres adapter: the NOTIFY channel" }),
    f("max_pending", "integer", 1024, { min = 1,
      doc = "messages a slow subscriber queues before it drops the newest" }),
  } },
  { name = "outbox", doc = "the transactional outbox (app.outbox)", fields = {
    f("adapter", "adapter", "db", { values = { "db" } }),
    f("table", "string", "outbox_messages", { doc = "the outbox table" }),
    f("batch", "integer", 100, { min = 1, doc = "messages a relay claims at once" }),
    f("lease", "duration", 30, { doc = "how long a claimed batch is the relay's" }),
    f("max_attempts", "integer", 10, { min = 1, doc = "failed deliveries before dead" }),
    f("base", "duration", 1, { doc = "first retry delay (doubling, jittered)" }),
    f("cap", "duration", 300, { doc = "longest retry delay" }),
    f("relay", "boolean", false, { doc = "zever worker runs the relay (also when the app uses app.outbox)" }),
    f("relay_sink", "enum", "queue", { values = { "queue", "eventbus" },
      doc = "where the relay publishes: app.queue or app.eventbus" }),
    f("relay_interval", "duration", 1, { doc = "the relay's pause when a batch was not full" }),
  } },
  { name = "breaker", doc = "circuit breakers (app.breaker)", fields = {
    f("adapter", "adapter", "memory", { values = { "memory", "inproc", "redis" } }),
    f("url", "string", "", { doc = "redis adapter: overrides redis.url" }),
    f("prefix", "string", "zever:breaker:", { doc = "redis adapter: key prefix" }),
    f("failure_rate", "number", 0.5, { doc = "share of failed calls in the window that opens" }),
    f("slow_rate", "number", 1, { doc = "share of slow calls in the window that opens" }),
    f("slow_call", "duration", 0, { doc = "a call at least this long is slow; 0 = not counted" }),
    f("window", "integer", 20, { min = 1, doc = "the last calls counted" }),
    f("min_calls", "integer", 10, { min = 1, doc = "calls in the window before it can open" }),
    f("open_for", "duration", 30, { doc = "how long an open breaker refuses calls" }),
    f("half_open_calls", "integer", 3, { min = 1, doc = "trial calls that close it again" }),
  } },
  { name = "webhook", doc = "outgoing webhooks (app.webhook)", fields = {
    f("adapter", "adapter", "memory", { values = { "memory", "db" } }),
    f("table", "string", "webhook_endpoints", { doc = "db adapter: the endpoints' table" }),
    f("attempts", "integer", 8, { min = 1, doc = "delivery tries before the dead-letter list" }),
    f("base", "duration", 30, { doc = "first retry delay (doubling, jittered)" }),
    f("cap", "duration", 3600, { doc = "longest retry delay" }),
  } },
  { name = "flag", doc = "feature flags (app.flag; docs/flag.md)", fields = {
    f("adapter", "adapter", "file", { values = { "file", "memory" } }),
    f("file", "string", "", { relative = "file",
      doc = "file adapter: the YAML or JSON flag file; empty = no flags (fallbacks)" }),
    f("watch", "boolean", true, { doc = "file adapter: reload the file when it changes" }),
  } },
  { name = "i18n", doc = "translations (app.i18n; docs/i18n.md)", fields = {
    f("adapter", "adapter", "file", { values = { "file", "memory" } }),
    f("dir", "string", "locales", { relative = "file",
      doc = "file adapter: the folder of *.yaml / *.json translation files" }),
    f("default_locale", "string", "en", { doc = "the locale of last resort" }),
    f("missing", "enum", "auto", { values = { "auto", "log", "raise", "ignore" },
      doc = "missing keys: log, raise or ignore; auto = log when ZEVER_ENV=development" }),
  } },
  { name = "permission", doc = "roles and permissions (app.permission; docs/permission.md)", fields = {
    f("adapter", "adapter", "rbac", { values = { "rbac", "noop" } }),
    f("source", "enum", "file", { values = { "file", "db" }, doc = "rbac: where the roles live" }),
    f("file", "string", "", { relative = "file",
      doc = "rbac file: the YAML or JSON roles; empty = no roles (everything denied)" }),
    f("refresh", "duration", 5, { doc = "rbac db: re-read the roles this often" }),
  } },
  { name = "tenant", doc = "the tenant of a request (app.tenant; docs/tenant.md)", fields = {
    f("adapter", "adapter", "single", { values = { "single", "header" } }),
    f("id", "string", "default", { doc = "single: the one tenant's id" }),
    f("header", "string", "X-Tenant-ID",
      { doc = "header: the request header naming the tenant (only behind a trusted gateway)" }),
  } },
  { name = "storage", doc = "objects and presigned URLs (app.storage; docs/storage.md)", fields = {
    f("adapter", "adapter", "local", { values = { "local", "s3" } }),
    f("root", "string", "storage", { relative = "file", doc = "local: the folder of the objects" }),
    f("s3_endpoint", "string", "", { doc = "s3: http(s)://host[:port] (path-style requests)" }),
    f("s3_bucket", "string", "", { doc = "s3: the bucket" }),
    f("s3_region", "string", "us-east-1", { doc = "s3: the region signed for" }),
    f("s3_access_key", "string", "", { doc = "s3: the access key id" }),
    f("s3_secret_key", "string", "", { secret = true, doc = "s3: the secret access key" }),
    f("secret", "string", "", { secret = true,
      doc = "presigned URLs: HMAC key (>= 32 bytes); empty = the crypto keyring" }),
    f("prefix", "string", "/_storage", { doc = "the path app.storage:mount serves under" }),
    f("expires", "duration", 900, { doc = "default lifetime of a presigned URL" }),
  } },
  { name = "media", doc = "image metadata and ranged downloads on storage (app.media)", fields = {
    f("adapter", "adapter", "storage", { values = { "storage" } }),
  } },
  { name = "secrets", doc = "named secrets (app.secrets; docs/secrets.md)", fields = {
    f("adapter", "adapter", "env", { values = { "env", "file" } }),
    f("prefix", "string", "SECRET_", { doc = "env: the variables' prefix" }),
    f("dir", "string", "secrets", { relative = "file",
      doc = "file: one file per secret; group/world-readable files are refused" }),
  } },
  { name = "notification", doc = "notifications to users (app.notification)", fields = {
    f("adapter", "adapter", "log", { values = { "log" } }),
    f("log_file", "string", "", { relative = "file", doc = "log: JSON lines file; empty = stderr" }),
  } },
  { name = "analytics", doc = "product analytics events (app.analytics)", fields = {
    f("adapter", "adapter", "log", { values = { "log" } }),
    f("log_file", "string", "", { relative = "file", doc = "log: JSON lines file; empty = stderr" }),
  } },
  { name = "payment", doc = "charges and refunds (app.payment; docs/payment.md)", fields = {
    f("adapter", "adapter", "stub", { values = { "stub" } }),
    f("webhook_secret", "string", "", { secret = true, doc = "verifies the provider's webhooks" }),
  } },
  { name = "billing", doc = "subscriptions (app.billing; docs/payment.md)", fields = {
    f("adapter", "adapter", "stub", { values = { "stub" } }),
    f("webhook_secret", "string", "", { secret = true, doc = "verifies the provider's webhooks" }),
    f("period", "duration", 2592000, { doc = "stub: the length of a billing period" }),
  } },
  { name = "geo", doc = "places, distances and IP networks (app.geo)", fields = {
    f("adapter", "adapter", "static", { values = { "static" } }),
    f("file", "string", "", { relative = "file", doc = "static: the JSON of places and networks" }),
  } },
  { name = "workflow", doc = "durable workflows (app.workflow)", fields = {
    f("adapter", "adapter", "memory", { values = { "memory", "db", "redis" } }),
    f("table", "string", "workflow", { doc = "db adapter: the tables' prefix" }),
    f("url", "string", "", { doc = "redis adapter: overrides redis.url" }),
    f("prefix", "string", "zever:workflow:", { doc = "redis adapter: key prefix" }),
    f("retention", "duration", 604800,
      { doc = "how long an ended run is kept (7 days); 0 keeps it until purged" }),
    f("sweep_interval", "duration", 60,
      { min = 1, doc = "how often zever worker deletes expired runs" }),
    f("sweep_batch", "integer", 100, { min = 1, doc = "expired runs deleted per sweep batch" }),
  } },
  { name = "metrics", doc = "metrics (app.metrics; /metrics with http.metrics; docs/observability.md)",
    fields = {
      f("adapter", "adapter", "prometheus", { values = { "prometheus", "noop" } }),
      f("registry", "string", "default", { doc = "the process-wide registry's name" }),
      f("max_cells", "integer", 65536,
        { min = 1, doc = "cells per worker (a counter series takes 1, a histogram's buckets + 2)" }),
      f("path", "string", "/metrics", { doc = "where app:metrics() answers the exposition" }),
      f("http", "boolean", true, { doc = "app:metrics() records the built-in HTTP metrics" }),
    } },
  { name = "trace", doc = "tracing spans (app.trace; docs/observability.md)", fields = {
    f("adapter", "adapter", "noop", { values = { "noop", "stdout", "otlp" } }),
    f("service", "string", "zever", { doc = "service.name of the exported spans" }),
    f("endpoint", "string", "http://127.0.0.1:4318/v1/traces",
      { doc = "otlp: the collector's OTLP/HTTP JSON traces endpoint" }),
    f("file", "string", "", { relative = "file", doc = "stdout: a file to append to instead" }),
    f("sample", "number", 1, { doc = "share of new traces recorded (0..1)" }),
    f("batch", "integer", 64, { min = 1, doc = "otlp: spans per export" }),
    f("flush", "duration", 1, { doc = "otlp: export spans at least this often" }),
    f("timeout", "duration", 2, { doc = "otlp: give up one export after this long" }),
    f("http", "boolean", true,
      { doc = "with an adapter other than noop, every app traces its requests (app:trace())" }),
  } },
  { name = "dashboard", doc = "the /_zever development dashboard (docs/dashboard.md)", fields = {
    f("enabled", "boolean", false,
      { doc = "serve it (zever dev sets DASHBOARD_ENABLED=true); without token, development only" }),
    f("path", "string", "/_zever", { doc = "where the page and its /api/ answer" }),
    f("token", "string", "", { secret = true,
      doc = "required as Authorization: Bearer (or ?token=) when set; needed outside development" }),
    f("recent", "integer", 100, { min = 1, doc = "recent requests kept per worker" }),
  } },
  -- The app's own settings: any keys, any YAML values (nested mappings and lists too), read as
  -- app:config().app.<key>. APP_<KEY> sets a top-level key from the environment.
  { name = "app", free = true, doc = "the application's own settings (free-form)", fields = {} },
}

M.by_name = tnew(0, #M.sections)
M.names = tnew(#M.sections, 0)
-- Batteries: the sections with an adapter field, in schema order.
M.batteries = {}
-- One pass, each section's prefixes made once (this runs at every start: see f above).
local upper, gsub, find = string.upper, string.gsub, string.find
for i, s in ipairs(M.sections) do
  local sname = s.name
  M.by_name[sname] = s
  M.names[i] = sname
  local n = #s.fields
  local by_name, field_names = tnew(0, n), tnew(n, 0)
  s.by_name, s.field_names = by_name, field_names
  local path, env = sname .. ".", upper(sname) .. "_"
  for j, field in ipairs(s.fields) do
    local name = field.name
    by_name[name] = field
    field_names[j] = name
    field.section = sname
    field.path = path .. name
    field.env = env .. upper(name)
  end
  if by_name.adapter then M.batteries[#M.batteries + 1] = sname end
end

-- Environment names, normalised: lower case without "_" ("MAILER_SMTP_HOST" -> "mailersmtphost")
-- -> field. Built on first use (zever.config.env, for a variable that is not spelt canonically):
-- most starts never need it. Two fields must never normalise to the same name: building it
-- raises then (spec/zever/config_spec.lua builds it).
local by_env
function M.env_index()
  if by_env then return by_env end
  local index = tnew(0, 256)
  for _, s in ipairs(M.sections) do
    local key = gsub(s.name, "_", "")
    for _, field in ipairs(s.fields) do
      local name = field.name
      local k = key .. (find(name, "_", 1, true) and gsub(name, "_", "") or name)
      if index[k] ~= nil then
        error("config schema: " .. field.path .. " collides in the environment")
      end
      index[k] = field
    end
  end
  by_env = index
  return index
end

return M
