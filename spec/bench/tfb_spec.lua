-- bench/tfb: the zever side of the TechEmpower benchmark answers by the TFB rules. The spec
-- serves bench/tfb/app on the data bench/tfb/data.py writes and runs the checker bench/tfb/run.sh
-- runs before measuring (check.py), so neither the app nor the checker can rot unnoticed; and it
-- shows the checker failing on an app that breaks a rule.

local serve = require "spec.support.serve"
local process = require "spec.support.process"

local quote = process.quote

describe("bench/tfb", function()
  local dir, srv

  setup(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. quote(dir)) == 0)
    local r = process.run(process.PYTHON .. " bench/tfb/data.py " .. quote(dir .. "/tfb.db"))
    assert.are.equal(0, r.code, r.stderr)
    local log
    srv, log = serve.start("bench/tfb/app", { "--workers", "1", "--listen", "127.0.0.1:0",
      "--access-log", "off" }, { DB_DSN = "sqlite:" .. dir .. "/tfb.db" })
    assert(srv, log)
  end)

  teardown(function()
    if srv then srv:kill() end
    os.execute("rm -rf " .. quote(dir))
  end)

  it("answers every test type as the TFB rules ask (check.py)", function()
    local r = process.run(process.PYTHON .. " bench/tfb/check.py zever http://127.0.0.1:" .. srv.port .. " "
      .. quote(dir .. "/tfb.db"))
    assert.are.equal(0, r.code, r.stderr)
    assert.matches("every TFB rule checked holds", r.stdout)
  end)

  it("has a checker that rejects a database the answers do not match", function()
    -- The same server checked against another copy of the data: /db rows disagree with it.
    local other = dir .. "/other.db"
    local r = process.run(process.PYTHON .. " -c " .. quote("import sqlite3, sys\n" ..
      "db = sqlite3.connect(sys.argv[1])\n" ..
      "db.execute('CREATE TABLE World (id INTEGER PRIMARY KEY, randomNumber INTEGER)')\n" ..
      "db.execute('CREATE TABLE Fortune (id INTEGER PRIMARY KEY, message TEXT)')\n" ..
      "db.executemany('INSERT INTO World VALUES (?, 0)', ((i,) for i in range(1, 10001)))\n" ..
      "db.commit()\n") .. " " .. quote(other))
    assert.are.equal(0, r.code, r.stderr)
    r = process.run(process.PYTHON .. " bench/tfb/check.py zever http://127.0.0.1:" .. srv.port .. " "
      .. quote(other))
    assert.are.equal(1, r.code)
    assert.matches("/db: row", r.stderr)
    assert.matches("/fortunes: HTML differs", r.stderr)
  end)
end)
