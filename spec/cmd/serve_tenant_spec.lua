-- `zever serve` with app.tenant: the tenant id reaches the access log (text and JSON) and the
-- app's own log lines, through the real binary and curl.

local serve = require "spec.support.serve"
local files = require "spec.support.files"
local json = require "zever.json"

local APP = [[
local zever = require "zever"
local app = zever.app()
app:use(app.tenant:middleware())
app:get("/who", function(req) app.log:info("handled") return req.tenant end)
return app
]]

describe("zever serve with app.tenant", function()
  local dir, srv
  before_each(function() dir = files.tmpdir({ ["app.lua"] = APP }, "tenant-serve") end)
  after_each(function()
    if srv then srv:kill() end
    srv = nil
    files.rm_rf(dir)
  end)

  for _, format in ipairs{ "text", "json" } do
    it("puts the tenant in the " .. format .. " access log and in the app's lines", function()
      srv = assert(serve.start(dir, { "--listen", "127.0.0.1:0", "--workers", "1" },
        { TENANT_ADAPTER = "header", HTTP_ACCESS_LOG = format, LOG_ADAPTER = format }))
      assert.are.equal("acme", srv:curl("/who", "-H 'X-Tenant-ID: acme'").stdout)
      assert.is_truthy(serve.wait_for(function() return srv:log():find("/who 200", 1, true)
        or srv:log():find('"path":"/who"', 1, true) end, 10))
      local log = srv:log()
      if format == "text" then
        assert.is_truthy(log:find("GET /who 200 4 [%d.]+ms tenant=acme\n"), log)
        assert.is_truthy(log:find("INFO handled[^\n]*tenant=acme"), log)
      else
        local access, app_line
        for line in log:gmatch("[^\n]+") do
          local ok, v = pcall(json.decode, line)
          if ok and type(v) == "table" then
            if v.path == "/who" then access = v end
            if v.msg == "handled" then app_line = v end
          end
        end
        assert.are.equal("acme", assert(access, log).tenant)
        assert.are.equal("acme", assert(app_line, log).tenant)
      end
    end)
  end
end)
