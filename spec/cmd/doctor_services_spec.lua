-- `zever doctor` and `zever config show` for the app-service batteries (flag, i18n, permission,
-- tenant, storage, media, secrets, notification, analytics, payment, billing, geo), through the
-- real binary.

local process = require "spec.support.process"
local json = require "zever.json"
local files = require "spec.support.files"

local function zever(dir, env, ...)
  local parts = { "cd " .. process.quote(dir) .. " && env -u ZEVER_ENV" }
  for _, kv in ipairs(env or {}) do parts[#parts + 1] = process.quote(kv) end
  parts[#parts + 1] = process.quote(require("zever.sys").exe())
  for i = 1, select("#", ...) do parts[#parts + 1] = process.quote((select(i, ...))) end
  return process.run(table.concat(parts, " "))
end

local BATTERIES = { flag = "file", i18n = "file", permission = "rbac", tenant = "single",
  storage = "local", media = "storage", secrets = "env", notification = "log", analytics = "log",
  payment = "stub", billing = "stub", geo = "static" }

describe("zever doctor: app services", function()
  it("lists each battery with its adapter and status, creating nothing", function()
    local dir = files.tmpdir({}, "doctor")
    local r = zever(dir, {}, "doctor", "--json")
    local storage_made = io.open(dir .. "/storage", "rb")
    files.rm_rf(dir)
    assert.equal(0, r.code)
    local rows = {}
    for _, row in ipairs(assert(json.decode(r.stdout)).rows) do rows[row.battery] = row end
    for battery, adapter in pairs(BATTERIES) do
      assert.truthy(rows[battery], battery .. " has no row")
      assert.same({ "OK", adapter }, { rows[battery].status, rows[battery].adapter }, battery)
    end
    assert.is_nil(storage_made)
  end)

  it("prints a FAIL row naming the broken flag file", function()
    local dir = files.tmpdir({ ["flags.yaml"] = "beta: {rollout: 500}\n" }, "doctor")
    local r = zever(dir, { "FLAG_FILE=flags.yaml" }, "doctor")
    files.rm_rf(dir)
    assert.equal(1, r.code)
    assert.matches("\nFAIL +flag +file +[^\n]*percentage from 0 to 100", r.stdout)
  end)
end)

describe("zever config show: app services", function()
  it("shows each new section and redacts their secrets", function()
    local dir = files.tmpdir({}, "config")
    local r = zever(dir, { "STORAGE_SECRET=" .. ("z"):rep(40), "PAYMENT_WEBHOOK_SECRET=whsec_leak",
      "BILLING_WEBHOOK_SECRET=whsec_leak2" }, "config", "show", "--json")
    files.rm_rf(dir)
    assert.equal(0, r.code)
    local cfg = assert(json.decode(r.stdout))
    for battery, adapter in pairs(BATTERIES) do assert.equal(adapter, cfg[battery].adapter, battery) end
    assert.equal("[REDACTED]", cfg.storage.secret)
    assert.equal("[REDACTED]", cfg.payment.webhook_secret)
    assert.is_nil(r.stdout:find("whsec_leak", 1, true))
    assert.is_nil(r.stdout:find("zzzz", 1, true))
    assert.equal("15m0s", cfg.storage.expires)
  end)
end)
