-- bench/config_bench.lua: the configuration layers and the container. Run with
--   bin/zever run bench/config_bench.lua [filter]
-- Prints Go-style lines: ns/op and the Lua heap allocated per op (collectgarbage("count")),
-- median of 5 runs of ~0.3 s each. The env scenarios replace this process's environment
-- (clearenv + setenv through the FFI) with 100 variables that are not zever's.

local ffi = require "ffi"
local sys = require "zever.sys"
local config = require "zever.config"
local env = require "zever.config.env"
local read = require "zever.config.read"
local redact = require "zever.config.redact"
local container = require "zever.container"

local filter = arg and arg[1]
local FIXTURE = sys.home() .. "/spec/fixtures/config/full"

local bench = require("bench.harness").new(filter, { seconds = 0.3 })

-- 100 variables that are not zever's: the usual ones, then filler.
require "zever.cdef.libc" -- clearenv, setenv
local COMMON = { "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "PWD",
  "OLDPWD", "HOSTNAME", "EDITOR", "PAGER", "MAIL", "DISPLAY", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR",
  "LS_COLORS", "TMPDIR", "SHLVL", "GOPATH", "JAVA_HOME", "NODE_ENV", "CI", "DEBIAN_FRONTEND" }
ffi.C.clearenv()
for i = 1, 100 do
  local name = COMMON[i] or string.format("ZZ_SETTING_%03d", i)
  ffi.C.setenv(name, "/usr/local/bin:/usr/bin:/bin", 1)
end

local yaml_src = assert(io.open(FIXTURE .. "/zever.yaml")):read("*a")
local env_table = { DB_DSN = "sqlite::memory:", HTTP_WORKERS = "2", LOG_LEVEL = "debug" }

bench("ConfigLoadFile", function()
  return assert(config.load{ dir = FIXTURE, env = env_table, environment = "production" })
end)
bench("ConfigLoadFileProcessEnv", function()
  return assert(config.load{ dir = FIXTURE, environment = "production" })
end)
bench("ConfigReadYAMLFast", function() return read.yaml(yaml_src, "zever.yaml") end)
bench("ConfigReadYAMLLibyaml", function() return read.yaml_full(yaml_src, "zever.yaml") end)

local cfg = config.defaults()
local function state() return { errors = {}, origin = {}, line = {}, applied = {} } end
bench("ConfigApplyEnv100Unrelated", function() return env.apply(cfg, nil, state()) end)
-- The same 100 names as the process environment above. (They were APP_SETTING_NNN until the
-- free-form app section made APP_<KEY> zever's: 75 of them then set app.setting_NNN, and the
-- scenario measured 75 stores instead of 100 names passed over.)
local unrelated = {}
for i = 1, 100 do unrelated[COMMON[i] or string.format("ZZ_SETTING_%03d", i)] = "x" end
bench("ConfigApplyEnvTable100", function() return env.apply(cfg, unrelated, state()) end)
-- os.getenv is read as one pass over environ (canonical names only); any other function is
-- still called once per field.
bench("ConfigApplyEnvGetenv", function() return env.apply(cfg, os.getenv, state()) end)

-- A 50-key config: 5 sections of 10 keys, with secrets, a DSN and URLs among them.
local fifty = {}
for s = 1, 5 do
  local t = {}
  for k = 1, 6 do t["field_" .. k] = "value " .. k end
  t.password = "hunter2"
  t.url = "redis://:pw@127.0.0.1:6379/0"
  t.dsn = "postgres://app:pw@db/app"
  t.api_key = ""
  fifty["section_" .. s] = t
end
local full = assert(config.load{ dir = FIXTURE, env = {} })
bench("ConfigRedact50Keys", function() return redact.copy(fifty) end)
bench("ConfigRedactFullConfig", function() return config.redact(full) end)
-- RedactFullConfig redacts each tree's own load of the fixture: 39 sections and 235 fields here,
-- 13 and 80 on the pre-kit tree. This one redacts the pre-kit tree's table on either tree (the
-- same input; bench/config_callgrind.lua's redactprekit runs it on both binaries).
local prekit = dofile(sys.home() .. "/spec/fixtures/config/pre_kit_full.lua")
bench("ConfigRedactPreKitConfig", function() return config.redact(prekit) end)

bench("ContainerGetCached", (function()
  local c = container.new(full)
  assert(c:get("log"))
  return function() return c:get("log") end
end)())
