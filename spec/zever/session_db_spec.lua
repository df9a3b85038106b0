-- zever.session with the db adapter: the conformance suite on a real SQLite file, and the
-- battery resolved from config by the container (the app's database).

local session = require "zever.session"
local sdb = require "adapters.session.db"
local zdb = require "zever.db"
local fs = require "spec.support.files"

describe("adapters.session.db", function()
  local dir, db
  setup(function()
    dir = fs.tmpdir(nil, "zever-session-db")
    db = assert(zdb.open("sqlite:" .. dir .. "/s.db"))
  end)
  teardown(function()
    db:close()
    fs.rm_rf(dir)
  end)

  local n = 0
  require("spec.conformance.session")("db (sqlite)", function(opts)
    n = n + 1
    return session.wrap(sdb.new(db, { table = "sessions_" .. n }), opts)
  end)

  it("keeps sessions in its table, readable by a second connection", function()
    local store = session.wrap(sdb.new(db, { table = "sessions_shared" }), {})
    local s = store:create()
    s.data.user = 9
    local token = assert(store:save(s))
    local db2 = assert(zdb.open("sqlite:" .. dir .. "/s.db"))
    finally(function() db2:close() end)
    local other = session.wrap(sdb.new(db2, { table = "sessions_shared" }), {})
    assert.equal(9, other:load(token).data.user)
    assert.equal(1, db2:first('SELECT count(*) AS n FROM "sessions_shared"').n)
  end)
end)

describe("app.session", function()
  it("resolves the configured adapter and cookie settings from config", function()
    local config = require "zever.config"
    local container = require "zever.container"
    local dir = fs.tmpdir(nil, "zever-session-cfg")
    local cfg = assert(config.load{ dir = dir, env = { SESSION_ADAPTER = "db",
      SESSION_IDLE_TIMEOUT = "5m", SESSION_COOKIE_NAME = "sid", SESSION_SECURE = "true",
      DB_DSN = "sqlite:" .. dir .. "/app.db" } })
    local c = container.new(cfg)
    finally(function() c:close(); fs.rm_rf(dir) end)
    local store = assert(c:get("session"))
    assert.equal(300, store.idle_timeout)
    assert.equal("sid", store.cookie.name)
    assert.is_true(store.cookie.secure)
    local s = store:create()
    s.data.k = "v"
    assert.equal("v", store:load(assert(store:save(s))).data.k)
  end)

  it("shows the session section in zever config show (it is not a secret)", function()
    local config = require "zever.config"
    local shown = config.redact(config.defaults())
    assert.equal("memory", shown.session.adapter)
    assert.equal("zever_session", shown.session.cookie_name)
    local secrets = require("zever.config.redact").secrets(config.defaults())
    for _, s in ipairs(secrets) do assert.not_equal("/", s) end
  end)
end)
