-- zever.config.paths: relative paths of a configuration resolve against the app folder.

local paths = require "zever.config.paths"
local config = require "zever.config"

describe("zever.config.paths", function()
  describe("absolute", function()
    local rows = {
      { "a relative path joins the base", "data/app.db", "/app", "/app/data/app.db" },
      { "./ at the start is dropped", "./a", "/app", "/app/a" },
      { ". is the base", ".", "/app/", "/app" },
      { "doubled and trailing slashes go", "a//b/", "/app", "/app/a/b" },
      { "/./ segments go", "/abs/./p/", nil, "/abs/p" },
      { "an empty path is the base", "", "/app", "/app" },
      { "a dot file stays", "a/.hidden", "/app", "/app/a/.hidden" },
      { "an absolute path ignores the base", "/etc/x", "/app", "/etc/x" },
    }
    for _, row in ipairs(rows) do
      it(row[1], function() assert.equal(row[4], paths.absolute(row[2], row[3])) end)
    end

    it("uses the current directory without a base", function()
      assert.equal(paths.cwd() .. "/x", paths.absolute("x"))
      assert.equal(".", paths.relative(paths.cwd()))
      assert.equal("x/y", paths.relative(paths.cwd() .. "/x/y"))
      assert.equal("/elsewhere-zever", paths.relative("/elsewhere-zever"))
    end)
  end)

  describe("resolve_dsn", function()
    local rows = {
      { "sqlite:data/app.db", "sqlite:/app/data/app.db" },
      { "sqlite:app.db", "sqlite:/app/app.db" },
      { "sqlite::memory:", "sqlite::memory:" },
      { "sqlite:/abs/app.db", "sqlite:/abs/app.db" },
      { "sqlite:///abs/app.db", "sqlite:///abs/app.db" },
      { "sqlite:file:x.db?mode=ro", "sqlite:file:x.db?mode=ro" },
      { "postgres://app:pw@db/app", "postgres://app:pw@db/app" },
    }
    for _, row in ipairs(rows) do
      it("turns " .. row[1] .. " into " .. row[2], function()
        assert.equal(row[2], paths.resolve_dsn(row[1], "/app"))
      end)
    end
  end)

  it("makes every marked field of a loaded config absolute against its folder", function()
    local cfg = assert(config.load{ dir = "/nonexistent-zever-app", env = { DB_DSN = "sqlite:data/app.db",
      MAILER_LOG_FILE = "log/mail.log", DB_MIGRATIONS = "db/migrate", HTTP_APP = "main.lua",
      MAILER_SMTP_CA_FILE = "/etc/ssl/ca.pem" } })
    assert.equal("sqlite:/nonexistent-zever-app/data/app.db", cfg.db.dsn)
    assert.equal("/nonexistent-zever-app/log/mail.log", cfg.mailer.log_file)
    assert.equal("/nonexistent-zever-app/db/migrate", cfg.db.migrations)
    assert.equal("/nonexistent-zever-app/main.lua", cfg.http.app)
    assert.equal("/etc/ssl/ca.pem", cfg.mailer.smtp_ca_file)
    assert.equal("/nonexistent-zever-app", config.sources(cfg).dir)
    assert.equal("$DB_DSN", config.sources(cfg).origin["db.dsn"])
    assert.is_nil(config.sources(cfg).origin["db.busy_timeout"])
  end)

  it("resolves the same value by its field's kind and folder, load after load", function()
    -- The same text in a file field and in the DSN, twice, from two folders: resolve keeps
    -- what it resolved, and must not give one kind's or one folder's answer to another.
    local env = { DB_DSN = "sqlite:same.db", HTTP_APP = "sqlite:same.db" }
    for _ = 1, 2 do
      for _, dir in ipairs({ "/nonexistent-zever-a", "/nonexistent-zever-b" }) do
        local cfg = assert(config.load{ dir = dir, env = env })
        assert.equal("sqlite:" .. dir .. "/same.db", cfg.db.dsn)
        assert.equal(dir .. "/sqlite:same.db", cfg.http.app)
      end
    end
  end)
end)
