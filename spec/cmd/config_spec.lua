-- spec/cmd/config_spec.lua: `zever config show` and `zever doctor`, through the real binary.

local process = require "spec.support.process"
local json = require "zever.json"
local tmpdir = require("spec.support.files").tmpdir

-- Runs zever with args in dir, with extra environment assignments ("K=V" strings).
local function zever(dir, env, ...)
  local parts = { "cd " .. process.quote(dir) .. " && env -u ZEVER_ENV" }
  for _, kv in ipairs(env or {}) do parts[#parts + 1] = process.quote(kv) end
  parts[#parts + 1] = process.quote(require("zever.sys").exe())
  for i = 1, select("#", ...) do parts[#parts + 1] = process.quote((select(i, ...))) end
  return process.run(table.concat(parts, " "))
end

describe("zever config show", function()
  local dir
  before_each(function()
    dir = tmpdir({ ["zever.yaml"] = "redis:\n  url: redis://:hunter2@127.0.0.1:6379/0\n" ..
      "mailer:\n  smtp_password: s3cret-pw\n  smtp_username: app\n" })
  end)
  after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

  it("prints the merged config as YAML with secrets redacted", function()
    local r = zever(dir, { "DB_DSN=sqlite:other.db", "HTTP_WORKERS=3" }, "config", "show")
    assert.equal(0, r.code)
    assert.equal("", r.stderr)
    assert.matches("# zever config: defaults %+ zever.yaml %+ environment %(DB_DSN, HTTP_WORKERS%)\n",
      r.stdout)
    assert.matches("\n  workers: 3\n", r.stdout, 1, true)
    assert.matches('\n  dsn: "[REDACTED]"\n', r.stdout, 1, true)
    assert.matches('\n  url: "redis://:[REDACTED]@127.0.0.1:6379/0"\n', r.stdout, 1, true)
    assert.matches('\n  smtp_password: "[REDACTED]"\n', r.stdout, 1, true)
    assert.matches("\n  smtp_username: app\n", r.stdout, 1, true)
    assert.is_nil(r.stdout:find("hunter2", 1, true))
    assert.is_nil(r.stdout:find("s3cret", 1, true))
  end)

  it("prints JSON with --json", function()
    local r = zever(dir, {}, "config", "show", "--json")
    assert.equal(0, r.code)
    local cfg = assert(json.decode(r.stdout))
    assert.equal("[REDACTED]", cfg.mailer.smtp_password)
    assert.equal("", cfg.mailer.from)
    assert.equal("10s", cfg.http.drain)
  end)

  it("exits 1 with the messages for an invalid config, never echoing a secret", function()
    local r = zever(dir, { "REDIS_URL=redis://:leaked@/bad url" }, "config", "show")
    assert.equal(1, r.code)
    assert.equal("zever config: invalid configuration:\nenvironment variable REDIS_URL (redis.url): " ..
      "expected redis://[:password@]host:port/db\n", r.stderr)
    assert.is_nil(r.stderr:find("leaked", 1, true))
  end)

  it("exits 2 with a did-you-mean for an unknown subcommand", function()
    local r = zever(dir, {}, "config", "shwo")
    assert.equal(2, r.code)
    assert.matches('unknown subcommand "shwo". Did you mean "show"?', r.stderr, 1, true)
  end)
end)

describe("zever doctor", function()
  it("prints an OK row for the config and each implemented battery", function()
    local dir = tmpdir()
    local r = zever(dir, {}, "doctor")
    os.execute("rm -rf '" .. dir .. "'")
    assert.equal(0, r.code)
    -- Column widths follow the longest battery name, so the rows are matched loosely.
    assert.matches("^OK +config +%- +loaded from defaults only\n", r.stdout)
    assert.matches("\nOK +db +sqlite +resolved and checked in [%d.]+ ms; SQLite [%d.]+, SELECT 1 in [%d.]+ ms\n",
      r.stdout)
    assert.matches("\nOK +log +text +resolved in [%d.]+ ms\n", r.stdout)
    -- Batteries without an implementation yet are listed on one last line (while any remain).
    local skipped = r.stdout:match("\nskipped %(no adapter implementation in this build%): ([^\n]*)\n$")
    if skipped then assert.is_nil(skipped:find("db", 1, true)) end
  end)

  it("prints a FAIL row with the reason and exits 1 when a battery cannot start", function()
    local dir = tmpdir()
    local r = zever(dir, { "DB_DSN=sqlite:/nonexistent/dir/app.db" }, "doctor", "--json")
    os.execute("rm -rf '" .. dir .. "'")
    assert.equal(1, r.code)
    local out = assert(json.decode(r.stdout))
    local db = out.rows[2]
    assert.same({ "FAIL", "db", "sqlite" }, { db.status, db.battery, db.adapter })
    assert.equal("db: cannot open /nonexistent/dir/app.db: unable to open database file", db.reason)
  end)

  it("prints a FAIL row for an invalid config and exits 1", function()
    local dir = tmpdir({ ["zever.yaml"] = "cahce:\n  adapter: memory\n" })
    local r = zever(dir, {}, "doctor")
    os.execute("rm -rf '" .. dir .. "'")
    assert.equal(1, r.code)
    assert.equal('FAIL  config  -  zever.yaml:1: cahce: unknown section; did you mean "cache"?\n', r.stdout)
  end)
end)
