-- spec/zever/startup_spec.lua: what `zever serve` does not load or do twice (issue #26): the
-- adapter registry registers a battery's built-ins on its first mention, an app that touches no
-- battery loads no adapter code, and a worker takes the configuration its main thread loaded
-- (zever.app.export / zever.app.preload) with the same values and sources as reading it.

local process = require "spec.support.process"
local serve = require "spec.support.serve"
local fs = require "spec.support.files"
local zapp = require "zever.app"
local config = require "zever.config"


local run_script = process.run_script

describe("start-up: the adapter registry", function()
  local dir
  before_each(function() dir = fs.tmpdir() end)
  after_each(function() fs.rm_rf(dir) end)

  it("registers a battery's built-ins before anything registered for it by hand", function()
    -- A fresh process: nothing has named "cache" yet when the spec's adapter replaces memory.
    local out = run_script(dir, [[
local adapters = require "zever.adapters"
adapters.register("cache", "memory", function() return { mine = true } end)
print(table.concat(adapters.names("cache"), ","))
print(adapters.get("cache", "memory").factory().mine)
print(adapters.unregister("queue", "memory"), table.concat(adapters.names("queue"), ","))
print(adapters.get("db", "sqlite") ~= nil, select(2, adapters.get("db", "nope")).message)
local b = adapters.batteries()
print(#b > 20, b[1])
]])
    assert.are.equal(table.concat({
      "db,memory,redis",
      "true",
      "true\tdb,redis",
      'true\tdb: unknown adapter "nope" (known: postgres, sqlite)',
      "true\tanalytics",
    }, "\n") .. "\n", out)
  end)

  it("is not loaded, nor the config checks, by a worker serving an app that touches no battery", function()
    local app = serve.temp_app([[
local zever = require "zever"
local app = zever.app()
app:get("/loaded", function()
  local out = {}
  for _, m in ipairs{ "zever.adapters", "zever.config", "zever.config.schema",
    "zever.config.validate" } do
    out[#out + 1] = m .. "=" .. tostring(package.loaded[m] ~= nil)
  end
  return table.concat(out, " ")
end)
app:get("/config", function() return app:config().http.listen .. " " .. app:config().app.name end)
return app
]])
    fs.write(app .. "/zever.yaml", "app:\n  name: demo\n")
    local srv, log = serve.start(app, { "--workers", "1" })
    assert(srv, log)
    local r = srv:curl("/loaded")
    local c = srv:curl("/config")
    srv:signal("TERM")
    local exited = srv:wait_exit(15)
    srv:kill()
    serve.remove(app)
    assert.is_true(exited)
    assert.are.equal("zever.adapters=false zever.config=false zever.config.schema=false " ..
      "zever.config.validate=false", r.stdout)
    assert.are.equal("127.0.0.1:8080 demo", c.stdout)
  end)
end)

describe("start-up: a worker's configuration from its main thread", function()
  -- As under `zever serve`, not `zever test` (whose test configuration is never exported).
  local dir, testing
  before_each(function()
    testing, zapp.testing = zapp.testing, false
    zapp.exporting = true   -- as serve's main thread sets it while it loads the app
    dir = fs.tmpdir()
    fs.write(dir .. "/app.lua", 'return require("zever").app()\n')
  end)
  after_each(function()
    zapp.testing = testing
    zapp.exporting = false
    zapp.preload(nil)
    fs.rm_rf(dir)
  end)

  local function no_marks(t)
    if type(t) ~= "table" then return true end
    if getmetatable(t) ~= nil then return false end
    for _, v in pairs(t) do if not no_marks(v) then return false end end
    return true
  end

  it("gives the same values and sources as loading it", function()
    fs.write(dir .. "/zever.yaml", table.concat({
      "cache:", "  adapter: memory", "  max_bytes: 1000",
      "app:", "  name: demo", "  list: [1, 2, three]", "  nested:", "    deep: {}", "" }, "\n"))
    local a = zapp.load(dir)
    local text = zapp.export(a)
    assert.is_string(text)
    zapp.preload(text)
    local b = zapp.load(dir)
    local ca, cb = a:config(), b:config()
    assert.are_not.equal(ca, cb)
    assert.are.same(ca, cb)
    assert.is_true(no_marks(cb))
    assert.are.same(config.sources(ca), config.sources(cb))
    assert.are.equal("zever.yaml", config.sources(cb).origin["cache.max_bytes"]:match("[^/]*$"))
    -- Each app of the folder gets a copy of its own.
    local c = zapp.load(dir)
    assert.are_not.equal(cb, c:config())
    assert.are.same(cb, c:config())
  end)

  it("is the configuration as loaded, before the app's own code changed it", function()
    fs.write(dir .. "/app.lua", [[
local app = require("zever").app()
local cfg = app:config()
cfg.app.count = (cfg.app.count or 0) + 1
return app
]])
    local a = zapp.load(dir)
    assert.are.equal(1, a:config().app.count)
    zapp.preload(zapp.export(a))
    local b = zapp.load(dir)   -- the worker runs the same code on its copy
    assert.are.equal(1, b:config().app.count)
  end)

  it("is not exported when JSON would not give it back as it is", function()
    fs.write(dir .. "/zever.yaml", "app:\n  list: [1, ~, 3]\n")   -- a null kept in a list
    local a = zapp.load(dir)
    assert.are.equal(config.null, a:config().app.list[2])
    assert.is_nil(zapp.export(a))
  end)

  it("is loaded as before when the text is refused or names another folder", function()
    fs.write(dir .. "/zever.yaml", "app:\n  name: from-file\n")
    local a = zapp.load(dir)
    local text = zapp.export(a)
    zapp.preload(text:gsub("from%-file", "from-\255"))   -- not UTF-8: the reader refuses it
    assert.is_nil(zapp.preloaded)
    assert.are.equal("from-file", zapp.load(dir):config().app.name)
    zapp.preload(text:gsub("from%-file", "other"))
    local other = fs.tmpdir()
    fs.write(other .. "/app.lua", 'return require("zever").app()\n')
    local ok, o = pcall(zapp.load, other)
    fs.rm_rf(other)
    assert(ok, o)
    assert.is_nil(o:config().app.name)
  end)
end)
