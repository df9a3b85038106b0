-- zever serve as PID 1, the first process of a container: it reaps the children that end
-- (orphans re-parented to it included) and stops on SIGTERM, which the kernel would otherwise
-- ignore for PID 1 (no default action). unshare(1) gives it a PID namespace of its own.

local process = require "spec.support.process"
local files = require "spec.support.files"
local serve = require "spec.support.serve"
local sys = require "zever.sys"

local quote = process.quote

describe("zever serve as PID 1 #pid1", function()
  it("reaps orphans and drains on SIGTERM", function()
    if process.run("unshare --pid --fork --mount-proc true").code ~= 0 then
      pending("unshare --pid needs root (or user namespaces)")
      return
    end
    local app = files.tmpdir({ ["app.lua"] = [[
local app = require("zever").app()
-- The shell exits at once; its background sleep becomes an orphan, re-parented to PID 1.
app:get("/orphan", function() os.execute("sh -c 'sleep 0.2 & exit 0'") return "spawned" end)
app:get("/pid", function() return tostring(require("zever.systemd_core").getpid()) end)
return app
]] }, "zv-pid1")
    local defer = require("spec.support.defer")(finally)
    defer(function() files.rm_rf(app) end)
    local port = serve.free_port()
    local log = app .. "/serve.log"
    -- --kill-child: if unshare dies (the spec's cleanup), the namespace's PID 1 dies with it.
    local p = io.popen("unshare --pid --fork --kill-child --mount-proc " .. quote(sys.exe()) .. " serve " ..
      quote(app) .. " --workers 1 --listen 127.0.0.1:" .. port .. " >" .. quote(log) ..
      " 2>&1 & echo $!")
    local outer = tonumber(p:read("*l"))
    p:close()
    defer(function() os.execute("kill -9 " .. outer .. " 2>/dev/null") end)
    local base = "curl -s --max-time 5 http://127.0.0.1:" .. port
    assert.truthy(serve.wait_for(function() return process.run(base .. "/pid").stdout == "1" end, 20),
      files.text(log))
    local zpid = tonumber(files.sh("pgrep -P " .. outer))
    assert.is_number(zpid)
    defer(function() os.execute("kill -9 " .. zpid .. " 2>/dev/null") end)
    assert.equal("spawned", process.run(base .. "/orphan").stdout)
    -- The orphan is zever's child (in the outer namespace's numbering) until it ends; then no
    -- zombie may stay behind.
    local reaped = serve.wait_for(function()
      return files.sh("ps --ppid " .. zpid .. " -o stat= -o comm=") == ""
    end, 20)
    assert.truthy(reaped, files.sh("ps --ppid " .. zpid .. " -o pid= -o stat= -o comm="))
    os.execute("kill -TERM " .. zpid)
    assert.truthy(serve.wait_for(function()
      return not process.alive(outer)
    end, 20))
    assert.matches("SIGTERM, draining", files.text(log))
  end)
end)
