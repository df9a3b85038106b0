-- spec/zever/config_spec.lua: zever.config: the layers, their precedence, strict files, the
-- environment, validation and redaction, with the exact messages users see.

local config = require "zever.config"
local read = require "zever.config.read"
local redact = require "zever.config.redact"
local json = require "zever.json"
local sys = require "zever.sys"
local fs = require "spec.support.files"

local FIXTURES = sys.home() .. "/spec/fixtures/config"

-- Loads from a fresh folder holding files { name = text }; env is a table. Returns cfg, err
-- and the folder (removed by then).
local function load_with(files, env, environment)
  local dir = fs.tmpdir(files)
  local cfg, err = config.load{ dir = dir, env = env or {}, environment = environment }
  os.execute("rm -rf '" .. dir .. "'")
  return cfg, err, dir
end

-- The defaults as config.load gives them for an app in dir: relative paths made absolute.
local function defaults_in(dir)
  return require("zever.config.paths").resolve(config.defaults(), dir)
end

-- The error message with the temporary folder removed from file names.
local function message(err)
  return (tostring(err):gsub("/[^\n]-/(zever[%w.]*%.%a+)", "%1"))
end

describe("zever.config", function()
  describe("the app section", function()
    it("takes any keys and values, merging an overlay's mappings key by key", function()
      local cfg = assert(load_with({
        ["zever.yaml"] = "app:\n  name: Shop\n  limits:\n    page: 20\n    max: 100\n  tags: [a, b]\n",
        ["zever.production.yaml"] = "app:\n  limits:\n    page: 50\n  tags: [c]\n",
      }, {}, "production"))
      assert.same({ name = "Shop", limits = { page = 50, max = 100 }, tags = { "c" } }, cfg.app)
    end)

    it("lets APP_<KEY> set a key, keeping the type the file gave it", function()
      local cfg = assert(load_with({ ["zever.yaml"] = "app:\n  per_page: 20\n  beta: false\n" },
        { APP_PER_PAGE = "50", APP_BETA = "yes", APP_GREETING = "hi", APP_ = "ignored" }))
      assert.same({ per_page = 50, beta = true, greeting = "hi" }, cfg.app)
    end)

    it("asks a getenv function only for the keys the files declare", function()
      local asked = {}
      local cfg = assert(load_with({ ["zever.yaml"] = "app:\n  per_page: 20\n" }, function(name)
        asked[#asked + 1] = name
        if name == "APP_PER_PAGE" then return "30" end
      end))
      assert.equal(30, cfg.app.per_page)
      local apps = {}
      for _, n in ipairs(asked) do
        if n:sub(1, 4) == "APP_" then apps[#apps + 1] = n end
      end
      assert.same({ "APP_PER_PAGE" }, apps)
    end)

    it("reports an APP_ value of the wrong type and a mapping set from the environment", function()
      local cfg, err = load_with({ ["zever.yaml"] = "app:\n  per_page: 20\n  mail:\n    from: a\n" },
        { APP_PER_PAGE = "many", APP_MAIL = "x" })
      assert.is_nil(cfg)
      local msg = message(err)
      assert.matches("environment variable APP_PER_PAGE (app.per_page): expected a number", msg, 1, true)
      assert.matches("environment variable APP_MAIL (app.mail): the file sets a mapping or a list here", msg, 1, true)
      assert.is_nil(msg:find("many", 1, true))
    end)

    it("is rendered as YAML that loads back, and redacted by key", function()
      local cfg = assert(load_with({ ["zever.yaml"] =
        "app:\n  name: Shop\n  api_key: k-123\n  nested:\n    list: [1, two]\n" }))
      local text = config.render(config.redact(cfg))
      assert.matches('\napp:\n  api_key: "[REDACTED]"\n  name: Shop\n  nested:\n    list:\n      - 1\n      - two\n',
        text, 1, true)
      local back = assert(load_with({ ["zever.yaml"] = config.render(cfg) }))
      assert.same(cfg.app, back.app)
    end)
  end)

  describe("defaults", function()
    it("uses the zero-infrastructure adapter of every battery", function()
      local cfg = config.defaults()
      local want = { db = "sqlite", cache = "memory", queue = "db", scheduler = "memory",
        mailer = "log", limiter = "memory", idempotency = "memory", search = "db", vectors = "db",
        log = "text", jobs = "queue" }
      for battery, adapter in pairs(want) do assert.equal(adapter, cfg[battery].adapter, battery) end
      assert.equal("sqlite:app.db", cfg.db.dsn)
      assert.equal("info", cfg.log.level)
    end)

    it("gives http its listen address, workers and limits", function()
      local h = config.defaults().http
      assert.same({ "127.0.0.1:8080", 0, "text", 10, 8192, 1048576, 10, 30, 75, 10000 },
        { h.listen, h.workers, h.access_log, h.drain, h.max_header_bytes, h.max_body_bytes,
          h.header_timeout, h.body_timeout, h.keepalive_timeout, h.max_connections })
    end)

    it("holds exactly each schema field's default, in a fresh table per call", function()
      local want = {}
      for _, s in ipairs(config.schema.sections) do
        local t = {}
        for _, f in ipairs(s.fields) do t[f.name] = f.default end
        want[s.name] = t
      end
      local a, b = config.defaults(), config.defaults()
      assert.same(want, a)
      for _, s in ipairs(config.schema.sections) do
        for _, f in ipairs(s.fields) do
          assert.equal(type(f.default), type(a[s.name][f.name]), f.path)
        end
      end
      assert.are_not.equal(a, b)
      assert.are_not.equal(a.http, b.http)
      a.http.workers = 99
      assert.equal(0, b.http.workers)
      assert.equal(0, config.defaults().http.workers)
    end)

    it("loads the defaults when there is no file and no variable", function()
      local cfg, _, dir = load_with({})
      assert.same(defaults_in(dir), assert(cfg))
    end)
  end)

  describe("layers", function()
    it("lets the file override the defaults and converts durations to seconds", function()
      local cfg = assert(load_with({ ["zever.yaml"] = "http:\n  drain: 1m30s\n  workers: 3\n" }))
      assert.equal(90, cfg.http.drain)
      assert.equal(3, cfg.http.workers)
      assert.equal("127.0.0.1:8080", cfg.http.listen)
    end)

    it("accepts every duration format of the codec", function()
      local cfg = assert(load_with({ ["zever.yaml"] =
        "http:\n  drain: PT30S\n  body_timeout: 1500000000\ncache:\n  ttl_default: P1D\n" }))
      assert.equal(30, cfg.http.drain)
      assert.equal(1.5, cfg.http.body_timeout)
      assert.equal(86400, cfg.cache.ttl_default)
    end)

    it("lets the ZEVER_ENV overlay override the file", function()
      local cfg = assert(load_with({
        ["zever.yaml"] = "http:\n  workers: 3\nlog:\n  level: debug\n",
        ["zever.production.yaml"] = "http:\n  workers: 8\n",
      }, { ZEVER_ENV = "production" }))
      assert.equal(8, cfg.http.workers)
      assert.equal("debug", cfg.log.level)
    end)

    it("ignores overlays of other environments", function()
      local cfg = assert(load_with({
        ["zever.yaml"] = "http:\n  workers: 3\n",
        ["zever.production.yaml"] = "http:\n  workers: 8\n",
      }, {}, "test"))
      assert.equal(3, cfg.http.workers)
    end)

    it("lets environment variables override the overlay", function()
      local cfg = assert(load_with({
        ["zever.yaml"] = "http:\n  workers: 3\n",
        ["zever.production.yaml"] = "http:\n  workers: 8\n",
      }, { HTTP_WORKERS = "12" }, "production"))
      assert.equal(12, cfg.http.workers)
    end)

    it("reads zever.json like zever.yaml", function()
      local cfg = assert(load_with({
        ["zever.json"] = '{"cache": {"adapter": "redis", "ttl_default": "5m"}}' }))
      assert.equal("redis", cfg.cache.adapter)
      assert.equal(300, cfg.cache.ttl_default)
    end)

    it("keeps the default for a null value", function()
      local cfg = assert(load_with({ ["zever.yaml"] = "http:\n  listen:\nlog:\n" }))
      assert.equal("127.0.0.1:8080", cfg.http.listen)
    end)

    it("records the files and variables it applied", function()
      local cfg = assert(config.load{ dir = FIXTURES .. "/full", env = { LOG_LEVEL = "error" },
        environment = "production" })
      local src = config.sources(cfg)
      assert.equal(2, #src.files)
      assert.same({ "LOG_LEVEL" }, src.vars)
      assert.equal("error", cfg.log.level)
      assert.equal(8, cfg.http.workers)
    end)
  end)

  describe("file errors", function()
    local rows = {
      { "an unknown field, with a did-you-mean",
        "cache:\n  adapter: memory\n  ttl_defualt: 5m\n",
        'zever.yaml:3: cache.ttl_defualt: unknown field; did you mean "ttl_default"?' },
      { "an unknown section, with a did-you-mean",
        "cahce:\n  adapter: memory\n",
        'zever.yaml:1: cahce: unknown section; did you mean "cache"?' },
      { "an unknown section far from any name, listing the known ones",
        "zzzzzzzz:\n  a: 1\n",
        -- Every section of the schema, in its order (batteries add sections: no list to keep).
        "zever.yaml:1: zzzzzzzz: unknown section (known sections: "
          .. table.concat(require("zever.config.schema").names, ", ") .. ")" },
      { "a string where an integer belongs",
        "http:\n  workers: many\n",
        "zever.yaml:2: http.workers: expected an integer, got a string" },
      { "a number where a string belongs, without echoing it",
        "mailer:\n  smtp_password: 123456\n",
        "zever.yaml:2: mailer.smtp_password: expected a string, got an integer (quote it)" },
      { "a string where a boolean belongs (yes is a string in YAML 1.2)",
        "jobs:\n  backoff_jitter: yes\n",
        "zever.yaml:2: jobs.backoff_jitter: expected a boolean (true or false), got a string" },
      { "a bad duration",
        "http:\n  drain: 10 parsecs\n",
        'zever.yaml:2: http.drain: expected a duration like "30s", "1h30m", "PT30S", "P1D" or ' ..
        "integer nanoseconds" },
      { "a value below the minimum",
        "http:\n  max_connections: 0\n",
        "zever.yaml:2: http.max_connections: must be at least 1" },
      { "an unknown adapter, with a did-you-mean and the known ones",
        "cache:\n  adapter: rediss\n",
        'zever.yaml:2: cache.adapter: unknown adapter "rediss"; did you mean "redis"? ' ..
        "(known: memory, db, redis)" },
      { "a scalar where a section belongs",
        "http: fast\n",
        "zever.yaml:1: http: expected a mapping of fields, got a string" },
      { "a duplicate key",
        "http:\n  workers: 1\n  workers: 2\n",
        'zever.yaml:3: duplicate key "workers"' },
      { "a YAML syntax error, with its position",
        "http:\n  workers: [1,\n",
        "zever.yaml:3: did not find expected node content (column 1)" },
      { "a DSN of another adapter than the one set, without echoing it",
        "db:\n  adapter: sqlite\n  dsn: postgres://app:pw@db/app\n",
        'zever.yaml:3: db.dsn: the DSN does not belong to db.adapter "sqlite" ' ..
        "(want sqlite:<path> or sqlite::memory:)" },
      { "a malformed Redis URL, without echoing it",
        "redis:\n  url: http://:pw@h\n",
        "zever.yaml:2: redis.url: expected redis://[:password@]host:port/db" },
    }
    for _, row in ipairs(rows) do
      it("reports " .. row[1], function()
        local cfg, err = load_with({ ["zever.yaml"] = row[2] })
        assert.is_nil(cfg)
        assert.equal("invalid", err.code)
        assert.equal(row[3], message(err))
      end)
    end

    it("reports every problem, in reading order", function()
      local _, err = load_with({ ["zever.yaml"] = "log:\n  levle: info\nhttp:\n  workers: x\n  listn: a\n" })
      assert.equal('zever.yaml:2: log.levle: unknown field; did you mean "level"?\n' ..
        "zever.yaml:4: http.workers: expected an integer, got a string\n" ..
        'zever.yaml:5: http.listn: unknown field; did you mean "listen"?', message(err))
      assert.equal(3, #err.errors)
    end)

    it("names zever.json in JSON errors", function()
      local _, err = load_with({ ["zever.json"] = '{"cache": {"ttl_defualt": "5m"}}' })
      assert.equal('zever.json: cache.ttl_defualt: unknown field; did you mean "ttl_default"?', message(err))
    end)

    it("refuses zever.yaml and zever.json side by side", function()
      local _, err = load_with({ ["zever.yaml"] = "", ["zever.json"] = "{}" })
      assert.matches("zever.yaml and .*zever.json exist; keep one$", message(err))
    end)

    it("names the overlay file in its errors", function()
      local _, err = load_with({ ["zever.test.yaml"] = "http:\n  wrokers: 2\n" }, {}, "test")
      assert.equal('zever.test.yaml:2: http.wrokers: unknown field; did you mean "workers"?', message(err))
    end)

    it("rejects an unknown ZEVER_ENV with a did-you-mean", function()
      local _, err = load_with({}, { ZEVER_ENV = "prodction" })
      assert.equal('environment variable ZEVER_ENV: unknown environment; did you mean "production"?',
        message(err))
    end)
  end)

  describe("environment", function()
    it("matches <SECTION>_<FIELD> ignoring case and underscores", function()
      local cfg = assert(load_with({}, { mailer_smtphost = "mail.example.com", CACHE_ADAPTER = "redis",
        Http_Listen = "0.0.0.0:8080", DB_DSN = "sqlite::memory:" }))
      assert.equal("mail.example.com", cfg.mailer.smtp_host)
      assert.equal("redis", cfg.cache.adapter)
      assert.equal("0.0.0.0:8080", cfg.http.listen)
      assert.equal("sqlite::memory:", cfg.db.dsn)
    end)

    it("ignores unknown and empty variables", function()
      local cfg, _, dir = load_with({}, { PATH = "/bin", CACHE_NOPE = "1", HTTP_LISTEN = "" })
      assert.same(defaults_in(dir), assert(cfg))
    end)

    it("parses booleans, integers and durations", function()
      local cfg = assert(load_with({}, { JOBS_BACKOFF_JITTER = "off", HTTP_WORKERS = "4",
        CACHE_TTL_DEFAULT = "PT1M", QUEUE_POLL_MAX = "500000000" }))
      assert.is_false(cfg.jobs.backoff_jitter)
      assert.equal(4, cfg.http.workers)
      assert.equal(60, cfg.cache.ttl_default)
      assert.equal(0.5, cfg.queue.poll_max)
    end)

    local rows = {
      { "HTTP_WORKERS", "4x2", "environment variable HTTP_WORKERS (http.workers): expected an integer" },
      { "CACHE_TTL_DEFAULT", "s3cretish",
        'environment variable CACHE_TTL_DEFAULT (cache.ttl_default): expected a duration like "30s", ' ..
        '"1h30m", "PT30S", "P1D" or integer nanoseconds' },
      { "JOBS_BACKOFF_JITTER", "maybe-s3cret",
        "environment variable JOBS_BACKOFF_JITTER (jobs.backoff_jitter): expected a boolean " ..
        "(true/false, 1/0, yes/no, on/off)" },
      { "CACHE_ADAPTER", "rediss",
        'environment variable CACHE_ADAPTER (cache.adapter): unknown adapter; did you mean "redis"? ' ..
        "(known: memory, db, redis)" },
      { "REDIS_URL", "redis://:hunter2@/x y",
        "environment variable REDIS_URL (redis.url): expected redis://[:password@]host:port/db" },
    }
    for _, row in ipairs(rows) do
      it("names " .. row[1] .. " without echoing its value when it does not parse", function()
        local _, err = load_with({}, { [row[1]] = row[2] })
        assert.equal(row[3], message(err))
        assert.is_nil(tostring(err):find(row[2], 1, true))
      end)
    end

    it("normalises every field of the schema to a name of its own", function()
      -- env_index raises on two fields that normalise alike (built on first use, not at load).
      local schema = require "zever.config.schema"
      local index = schema.env_index()
      local fields = 0
      for _, s in ipairs(schema.sections) do
        for _, field in ipairs(s.fields) do
          fields = fields + 1
          assert.equal(field, index[(s.name .. field.name):gsub("_", "")])
        end
      end
      local names = 0
      for _ in pairs(index) do names = names + 1 end
      assert.equal(fields, names)
      assert.equal(index, schema.env_index())
    end)

    describe("from the process environment", function()
      -- Variables of this describe's own, set in the real environ and removed after each spec.
      local ffi = require "ffi"
      require "zever.cdef.libc"
      local set_names = {}
      local function setenv(name, value)
        assert(os.getenv(name) == nil, name .. " is already set in this process")
        set_names[#set_names + 1] = name
        ffi.C.setenv(name, value, 1)
      end
      after_each(function()
        for _, name in ipairs(set_names) do ffi.C.unsetenv(name) end
        set_names = {}
      end)

      it("matches like a table source and skips names of no section", function()
        setenv("ZVSPEC_UNRELATED", "x")
        setenv("mailer_smtphost", "mail.example.com")
        setenv("JOBS_BACKOFF_JITTER", "off")
        local dir = fs.tmpdir()
        local cfg = assert(config.load{ dir = dir })
        assert.equal("mail.example.com", cfg.mailer.smtp_host)
        assert.is_false(cfg.jobs.backoff_jitter)
        assert.equal("$JOBS_BACKOFF_JITTER", config.sources(cfg).origin["jobs.backoff_jitter"])
      end)

      it("gives os.getenv what a function calling getenv per name gives, in the same order", function()
        local dir = fs.tmpdir({ ["zever.yaml"] = "app:\n  per_page: 20\n  beta: false\n" })
        setenv("LOG_LEVEL", "warn")
        setenv("HTTP_WORKERS", "4")
        setenv("cache_adapter", "redis")                 -- not canonical: getenv never asks it
        setenv("APP_PER_PAGE", "30")
        setenv("APP_BETA", "yes")
        setenv("APP_UNDECLARED", "x")                    -- no such key in the file: not asked
        local wrapper = function(name) return os.getenv(name) end
        local a = assert(config.load{ dir = dir, env = os.getenv })
        local b = assert(config.load{ dir = dir, env = wrapper })
        assert.same(b, a)
        assert.equal("warn", a.log.level)
        assert.equal(4, a.http.workers)
        assert.equal("memory", a.cache.adapter)
        assert.same({ per_page = 30, beta = true }, a.app)
        assert.same({ "HTTP_WORKERS", "LOG_LEVEL", "APP_BETA", "APP_PER_PAGE" }, config.sources(a).vars)
        assert.same(config.sources(b).vars, config.sources(a).vars)
        setenv("QUEUE_POLL_MAX", "soon")
        local _, ea = config.load{ dir = dir, env = os.getenv }
        local _, eb = config.load{ dir = dir, env = wrapper }
        assert.matches("environment variable QUEUE_POLL_MAX (queue.poll_max): expected a duration",
          tostring(ea), 1, true)
        assert.equal(tostring(eb), tostring(ea))
        os.execute("rm -rf '" .. dir .. "'")
      end)
    end)

    it("calls a getenv-like function with the canonical names", function()
      local asked = {}
      local cfg = assert(config.load{ dir = fs.tmpdir(), env = function(name)
        asked[#asked + 1] = name
        if name == "LOG_LEVEL" then return "warn" end
      end })
      assert.equal("warn", cfg.log.level)
      assert.truthy(#asked > 50)
    end)
  end)

  describe("YAML", function()
    it("reads the same tree on the fast road and through libyaml", function()
      for _, src in ipairs({
        io.open(FIXTURES .. "/full/zever.yaml"):read("*a"),
        "a:\n  b: 'x # y'  # c\n  c: \"q\"\n  d: -1.5\n  e: 0x1F\n  f: ~\n  g: 010\n  h: 1e3\nk: v\n",
        "a: on\nb: 1:30\nc: x#y\nd: http://u:p@h/x\ne: .inf\nf: 0o17\ng: True\nh:\n",
      }) do
        local fast = assert(read.yaml(src, "f"))
        local full = assert(read.yaml_full(src, "f"))
        assert.same(full, fast)
      end
    end)

    it("resolves plain scalars by the YAML 1.2 core schema", function()
      local t = assert(read.yaml("a: yes\nb: 010\nc: 1:30\nd: true\ne: 0x10\nf: '10'\n", "f"))
      assert.same({ a = "yes", b = 10, c = "1:30", d = true, e = 16, f = "10" }, t)
    end)

    it("sends files outside the fast subset to libyaml", function()
      local cfg = assert(config.load{ dir = FIXTURES .. "/exotic", env = {} })
      assert.equal(90, cfg.cache.ttl_default)
      assert.equal("app:", cfg.cache.prefix)
      assert.equal("ops@example.com", cfg.mailer.from)
    end)
  end)

  describe("redact", function()
    local strings = {
      { "a URL password", "postgres://app:pw@db/app", "postgres://app:[REDACTED]@db/app" },
      { "a token userinfo", "redis://tok@h:1/0", "redis://[REDACTED]@h:1/0" },
      { "two URLs in a message", "a redis://:x@h b postgres://u:y@d/z",
        "a redis://:[REDACTED]@h b postgres://u:[REDACTED]@d/z" },
      { "a password with a bracket", "redis://:pa[ss@host:1/0", "redis://:[REDACTED]@host:1/0" },
      { "the usage pattern of a message", "expected redis://[:password@]host:port/db",
        "expected redis://[:password@]host:port/db" },
      { "a key=value password", "host=db password=s3 user=u", "host=db password=[REDACTED] user=u" },
    }
    for _, row in ipairs(strings) do
      it("hides " .. row[1] .. " in a string", function()
        assert.equal(row[3], redact.redact_string(row[2]))
      end)
    end

    it("hides secret keys, nested too, and keeps empty values visible", function()
      local r = config.redact({ mailer = { smtp_password = "pw", smtp_username = "app", api_key = "" },
        db = { dsn = "sqlite:app.db" }, extra = { nested = { client_secret = "x", bearer_token = "t",
        session = "s", cookie = "c", max_keys = 10, monkey = "m", private_key = { pem = "k" } } } })
      assert.same({ mailer = { smtp_password = "[REDACTED]", smtp_username = "app", api_key = "" },
        db = { dsn = "[REDACTED]" }, extra = { nested = { client_secret = "[REDACTED]",
        bearer_token = "[REDACTED]", session = "[REDACTED]", cookie = "[REDACTED]", max_keys = 10,
        monkey = "m", private_key = { pem = "[REDACTED]" } } } }, r)
    end)

    it("hides passwords embedded in URLs and DSNs", function()
      local rows = {
        { "redis://:hunter2@127.0.0.1:6379/0", "redis://:[REDACTED]@127.0.0.1:6379/0" },
        { "postgres://app:pw@db:5432/app", "postgres://app:[REDACTED]@db:5432/app" },
        { "https://tok3n@example.com/x", "https://[REDACTED]@example.com/x" },
        { "host=db user=app password=pw dbname=x", "host=db user=app password=[REDACTED] dbname=x" },
        { "redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0" },
        { "ops@example.com", "ops@example.com" },
      }
      for _, row in ipairs(rows) do
        assert.equal(row[2], config.redact({ redis = { url = row[1] } }).redis.url)
      end
    end)

    -- Every field of every schema section, at its default and then set to a value with a URL
    -- password, against the documented rule applied field by field: a secret field (by its
    -- name, or secret = true) is hidden unless empty; any other string loses its embedded
    -- secrets; other values are kept. Unknown keys in a section are decided by name.
    it("redacts every schema field by the rule, at its default and when set", function()
      local function expected(cfg)
        local out = {}
        for name, section in pairs(cfg) do
          local s = config.schema.by_name[name]
          local t = {}
          for k, v in pairs(section) do
            local field = s and s.by_name[k]
            local secret = (field and field.secret) or redact.secret_key(k)
            if s and s.free then secret = redact.secret_key(k) end
            if type(v) == "table" then
              t[k] = redact.copy(v)
            elseif secret then
              t[k] = v == "" and v or "[REDACTED]"
            elseif type(v) == "string" then
              t[k] = redact.redact_string(v)
            else
              t[k] = v
            end
          end
          out[name] = t
        end
        return out
      end
      local cfg = config.defaults()
      cfg.app = { api_key = "k", name = "shop" }
      assert.same(expected(cfg), config.redact(cfg))
      local n = 0
      for _, s in ipairs(config.schema.sections) do
        for _, f in ipairs(s.fields) do
          if type(f.default) == "string" then
            n = n + 1
            cfg[s.name][f.name] = "redis://u:pw" .. n .. "@h:1/0"
          end
        end
      end
      cfg.http.not_a_field = "x"
      cfg.http.some_token = "t"
      local shown = config.redact(cfg)
      assert.same(expected(cfg), shown)
      assert.equal("[REDACTED]", shown.http.some_token)
      assert.equal("[REDACTED]", shown.dashboard.token)
      assert.equal("redis://u:[REDACTED]@h:1/0", shown.redis.url)
      assert.is_nil(config.render(shown):find("pw%d"))
    end)

    -- The compiled copiers (a section's fields read by name) against shapes load never makes:
    -- a section missing fields or holding a list, a section that is not a table, unknown keys
    -- beside the sections, lists and numeric keys in the free-form paths.
    it("copies any shape of table the way the rule says", function()
      local r = config.redact({
        http = { listen = { "a:1", "redis://:pw@h" }, [1] = "first", secret = "s" },
        crypto = { keys = "id:k", extra_key = "x" },
        mailer = "smtp://u:pw@host",
        app = { list = { "x", "y", "z" }, token = "t", nested = { api_key = "k" } },
        [7] = { "seven" },
        webhook_secret = { "a", "" },
      })
      assert.same({
        http = { listen = { "a:1", "redis://:[REDACTED]@h" }, [1] = "first", secret = "[REDACTED]" },
        crypto = { keys = "[REDACTED]", extra_key = "[REDACTED]" },
        mailer = "smtp://u:[REDACTED]@host",
        app = { list = { "x", "y", "z" }, token = "[REDACTED]", nested = { api_key = "[REDACTED]" } },
        [7] = { "seven" },
        webhook_secret = { "[REDACTED]", "" },
      }, r)
      assert.equal(3, #r.app.list)
      -- no section's key at all (the free-form copy from the top)
      assert.same({ cookie = "[REDACTED]", extra = { password = "[REDACTED]",
        url = "redis://:[REDACTED]@h", list = { "a", "" } }, auth_key = { "[REDACTED]" } },
        config.redact({ cookie = "c", extra = { password = "p", url = "redis://:pw@h",
        list = { "a", "" } }, auth_key = { "k" } }))
      assert.same({}, config.redact({}))
      assert.same({ http = {} }, config.redact({ http = {} }))
    end)

    it("does not change the config it is given", function()
      local cfg = config.defaults()
      cfg.mailer.smtp_password = "pw"
      config.redact(cfg)
      assert.equal("pw", cfg.mailer.smtp_password)
    end)

    it("classifies keys", function()
      for _, k in ipairs({ "password", "DB_PASSWORD", "secret", "auth_token", "bearer", "credentials",
        "dsn", "api_key", "stripe_api_key", "key", "private_key", "auth", "session", "cookie",
        "passwd", "pwd" }) do
        assert.is_true(redact.secret_key(k), k)
      end
      for _, k in ipairs({ "max_keys", "monkey", "author", "adapter", "url", "listen", "keys" }) do
        assert.is_false(redact.secret_key(k), k)
      end
    end)

    it("scrubs secret values out of messages", function()
      local cfg = config.defaults()
      cfg.redis.url = "redis://:hunter2@h:6379/0"
      cfg.mailer.smtp_password = "pa55"
      assert.equal("auth failed for [REDACTED] at redis://:[REDACTED]@h", config.scrub(cfg,
        "auth failed for pa55 at redis://:hunter2@h"))
    end)
  end)

  describe("render", function()
    it("writes YAML that loads back to the same config", function()
      local cfg = assert(config.load{ dir = FIXTURES .. "/full", env = {} })
      local again = assert(load_with({ ["zever.yaml"] = config.render(cfg) }))
      assert.same(cfg, again)
    end)

    it("writes durations as text in the plain copy for JSON", function()
      local p = config.plain(config.defaults())
      assert.equal("10s", p.http.drain)
      assert.equal(json.decode(json.encode(p)).http.listen, "127.0.0.1:8080")
    end)
  end)
end)
