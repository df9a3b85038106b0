-- The small app-service batteries: secrets (env, file: refusing loose permissions), notification
-- and analytics (log adapters: JSON lines in a real file), payment and billing (stub adapters,
-- webhook signatures through zever.webhook), geo (static JSON, haversine golden rows), each
-- through its conformance suite, plus app.<battery> from the config.

local secrets = require "zever.secrets"
local secrets_env = require "adapters.secrets.env"
local secrets_file = require "adapters.secrets.file"
local notification = require "zever.notification"
local analytics = require "zever.analytics"
local payment = require "zever.payment"
local billing = require "zever.billing"
local geo = require "zever.geo"
local json = require "zever.json"
local files = require "spec.support.files"

local dirs = {}
local function tmp(contents)
  local d = files.tmpdir(contents or {}, "svc")
  dirs[#dirs + 1] = d
  return d
end

-- Lines of a JSON-lines file, decoded.
local function lines_of(path)
  local out = {}
  local f = io.open(path, "rb")
  if not f then return out end
  for line in f:lines() do out[#out + 1] = json.decode(line) end
  f:close()
  return out
end

describe("app services", function()
  teardown(function() for _, d in ipairs(dirs) do files.rm_rf(d) end end)

  require("spec.conformance.secrets")("env", function(values)
    local vars = {}
    for k, v in pairs(values) do vars["APP_SECRET_" .. k:upper()] = v end
    return secrets.wrap(secrets_env.new{ prefix = "APP_SECRET_", getenv = function(n) return vars[n] end })
  end)
  require("spec.conformance.secrets")("file", function(values)
    local d = tmp()
    for k, v in pairs(values) do
      files.write(d .. "/" .. k, v .. "\n")
      os.execute("chmod 600 " .. d .. "/" .. k)
    end
    return secrets.new{ adapter = "file", dir = d }
  end)

  require("spec.conformance.notification")("log", function()
    local path = tmp() .. "/notifications.jsonl"
    return notification.new{ log_file = path }, function() return lines_of(path) end
  end)
  require("spec.conformance.analytics")("log", function()
    local path = tmp() .. "/analytics.jsonl"
    return analytics.new{ log_file = path }, function() return lines_of(path) end
  end)
  require("spec.conformance.payment")("stub", function(opts) return payment.new(opts) end)
  require("spec.conformance.billing")("stub", function(opts) return billing.new(opts) end)
  require("spec.conformance.geo")("static", function(data)
    local d = tmp{ ["geo.json"] = json.encode(data) }
    return geo.new{ file = d .. "/geo.json" }
  end)

  describe("secrets file adapter", function()
    it("refuses a secret file group or others may read, naming the mode and not the value", function()
      local d = tmp{ ["db_password"] = "hunter2-value\n", ["ok"] = "fine" }
      os.execute("chmod 640 " .. d .. "/db_password; chmod 600 " .. d .. "/ok")
      local s = secrets.new{ adapter = "file", dir = d }
      local v, err = s:get("db_password")
      assert.is_nil(v)
      assert.are.equal("insecure", err.code)
      assert.matches("mode 640", err.message, 1, true)
      assert.is_nil(err.message:find("hunter2", 1, true))
      os.execute("chmod 604 " .. d .. "/db_password")
      assert.are.equal("insecure", select(2, s:get("db_password")).code)
      os.execute("chmod 400 " .. d .. "/db_password")
      assert.are.equal("hunter2-value", s:get("db_password"))
      assert.are.equal("fine", s:get("ok"))
      assert.are.equal("invalid", select(2, s:get("../etc/passwd")).code)
      assert.are.equal("invalid", select(2, s:get(".hidden")).code)
    end)

    it("gives the same mode in C through the FFI and the classic binding", function()
      local d = tmp{ x = "v" }
      os.execute("chmod 640 " .. d .. "/x")
      local mode = secrets_file.stat(d .. "/x")
      assert.are.equal(tonumber("640", 8), mode % 4096)
      assert.are.equal(mode, (require("zever.secrets_core").stat(d .. "/x")))
      assert.is_nil(secrets_file.stat(d .. "/missing"))
    end)
  end)

  describe("geo.distance", function()
    -- Golden rows: great-circle distances on the 6371.0088 km sphere (haversine, checked by
    -- hand against the spherical law of cosines).
    for _, row in ipairs{
      { "same point", 10, 20, 10, 20, 0 },
      { "a quarter meridian", 0, 0, 90, 0, 10007557 },
      { "half the equator", 0, 0, 0, 180, 20015115 },
      { "antipodes", 45, 45, -45, -135, 20015115 },
      { "one degree of longitude at the equator", 0, 0, 0, 1, 111195 },
      { "across the antimeridian", 0, 179.5, 0, -179.5, 111195 },
    } do
      it("measures " .. row[1], function()
        local d = geo.distance(row[2], row[3], row[4], row[5])
        assert.is_true(math.abs(d - row[6]) < 1, row[1] .. ": " .. d)
      end)
    end

    it("raises on coordinates out of range", function()
      assert.has_error(function() geo.distance(0, 181, 0, 0) end)
      assert.has_error(function() geo.distance(0 / 0, 0, 0, 0) end)
    end)
  end)

  describe("app batteries from the config", function()
    it("resolves each with its default adapter and the environment's settings", function()
      local d = tmp{ ["geo.json"] = '{"places":[{"name":"Oslo","lat":59.91,"lon":10.75}]}' }
      local config, container = require "zever.config", require "zever.container"
      local c = container.new(assert(config.load{ dir = d, env = {
        NOTIFICATION_LOG_FILE = "n.jsonl", ANALYTICS_LOG_FILE = "a.jsonl", GEO_FILE = "geo.json",
        PAYMENT_WEBHOOK_SECRET = "whsec_x" } }))
      assert(assert(c:get("notification")):send{ to = "u", channel = "push", body = "b" })
      assert(assert(c:get("analytics")):track("E", { user_id = 1 }))
      assert.are.equal(1, #lines_of(d .. "/n.jsonl"))
      assert.are.equal(1, #lines_of(d .. "/a.jsonl"))
      assert.are.equal("Oslo", assert(c:get("geo")):place("oslo").name)
      assert(assert(c:get("payment")):charge{ amount = 1, currency = "nok" })
      assert(assert(c:get("billing")):subscribe{ customer = "c", plan = "p" })
      assert.are.equal("secrets (env)", tostring(assert(c:get("secrets"))))
      assert.is_true(c:close())
    end)
  end)
end)
