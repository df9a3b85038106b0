-- zever worker on SIGHUP: it drains as on SIGTERM, then runs its command line again (same
-- process id), reading the configuration and the app anew.

local process = require "spec.support.process"
local serve = require "spec.support.serve"
local sys = require "zever.sys"

local quote = process.quote

describe("zever worker SIGHUP", function()
  local pid, log, dbfile
  after_each(function()
    if pid then os.execute("kill -KILL " .. pid .. " 2>/dev/null") end
    os.remove(log)
    os.remove(dbfile)
  end)

  it("drains, starts again in the same process, and still stops on SIGTERM", function()
    log, dbfile = os.tmpname(), os.tmpname()
    local p = io.popen("DB_DSN=" .. quote("sqlite:" .. dbfile) .. " LOG_LEVEL=error exec " ..
      quote(sys.exe()) .. " worker spec/fixtures/jobs_app >" .. log .. " 2>&1 & echo $!")
    pid = tonumber(p:read("*l"))
    p:close()
    local function starts()
      local _, n = serve.slurp(log):gsub("zever: worker for", "")
      return n
    end
    assert.is_truthy(serve.wait_for(function() return starts() == 1 end, 15), serve.slurp(log))
    os.execute("kill -HUP " .. pid)
    assert.is_truthy(serve.wait_for(function() return starts() == 2 end, 15), serve.slurp(log))
    local text = serve.slurp(log)
    assert.is_truthy(text:find("SIGHUP, draining", 1, true))
    assert.is_truthy(text:find("SIGHUP: starting again", 1, true))
    assert.is_true(process.alive(pid))
    os.execute("kill -TERM " .. pid)
    assert.is_truthy(serve.wait_for(function()
      return not process.alive(pid)
    end, 15))
    pid = nil
  end)
end)
