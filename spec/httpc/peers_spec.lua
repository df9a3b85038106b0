-- zever.httpc against servers in other processes: `zever serve` (examples/hello) and nginx.
local httpc = require "zever.httpc"
local serve = require "spec.support.serve"
local nginx_server = require "spec.support.nginx_server"
local json = require "zever.json"

describe("zever.httpc against zever serve", function()
  local srv

  lazy_setup(function()
    srv = assert(serve.start("examples/hello", { "--listen", "127.0.0.1:0", "--workers", "1" }))
  end)

  lazy_teardown(function()
    httpc.close_idle()
    if srv then srv:kill() end
  end)

  it("gets, posts JSON and keeps one connection", function()
    local base = "http://127.0.0.1:" .. srv.port
    local c0 = httpc.stats.connects
    assert.equals("hello world", assert(httpc.get(base .. "/hello")).body)
    local res = assert(httpc.post(base .. "/echo", json.encode{ a = 1 },
      { headers = { ["content-type"] = "application/json" } }))
    assert.equals(200, res.status)
    assert.same({ a = 1 }, json.decode(res.body))
    assert.same({ id = 42 }, json.decode(assert(httpc.get(base .. "/users/42")).body))
    assert.equals(1, httpc.stats.connects - c0)
  end)

  it("does not map OpenSSL for plain http (TLS is the lazy httpc_tls module)", function()
    local process = require "spec.support.process"
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write([[
local http = require "zever.httpc"
local function ssl_mapped()
  local maps = io.open("/proc/self/maps"):read("*a")
  return maps:find("libssl", 1, true) ~= nil
end
assert(http.get(arg[1]))
io.write(tostring(ssl_mapped()), " ")
-- https to the plain server: the handshake fails, but the TLS module was loaded for it
assert(not http.get((arg[1]:gsub("^http:", "https:")), { timeout = 5 }))
io.write(tostring(ssl_mapped()), "\n")
]])
    f:close()
    local r = process.run(process.quote(require("zever.sys").exe()) .. " run " ..
      process.quote(script) .. " " .. process.quote("http://127.0.0.1:" .. srv.port .. "/hello"))
    os.remove(script)
    assert.equals(0, r.code, r.stderr)
    assert.equals("false true", (r.stdout:gsub("%s+$", "")))
  end)
end)

describe("zever.httpc against nginx", function()
  local srv

  lazy_setup(function()
    if nginx_server.available() then srv = assert(nginx_server.start({})) end
  end)

  lazy_teardown(function()
    httpc.close_idle()
    if srv then srv:stop() end
  end)

  it("gets pages over one keep-alive connection", function()
    if not srv then pending("nginx is not installed") return end
    local c0 = httpc.stats.connects
    for i = 1, 5 do
      local res = assert(httpc.get("http://127.0.0.1:" .. srv.port .. "/p" .. i))
      assert.equals(200, res.status)
      assert.equals("ok", res.body)
    end
    assert.equals(1, httpc.stats.connects - c0)
    -- nginx logs a request after answering it: wait (bounded) for the fifth line.
    require("spec.support.process").wait_for(function() return #srv:paths() >= 5 end, 10)
    assert.same({ "/p1", "/p2", "/p3", "/p4", "/p5" }, srv:paths())
  end)
end)
