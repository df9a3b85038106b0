-- bench/config_callgrind.lua: one scenario of bench/config_bench.lua run N times, for
-- instruction counts that load cannot move (bench/callgrind_delta.sh). It uses only what the
-- pre-kit tree also has, and sets the same environment and input on both sides, so the same
-- file runs on either binary:
--
--   SCENARIO=redactfull bash bench/callgrind_delta.sh bench/config_callgrind.lua 200 400
--   SCENARIO=redactfull ZEVER_DIR=/work/base \
--     bash bench/callgrind_delta.sh "$PWD/bench/config_callgrind.lua" 200 400
--
-- Scenarios: load, loadproc, fast, libyaml, env100, envtable, envgetenv, redact50, redactfull,
-- redactprekit (the pre-kit tree's loaded config, 13 sections and 80 fields, the same table on
-- both sides: spec/fixtures/config/pre_kit_full.lua of this checkout).
-- The process environment is 100 variables that are not zever's (ZZ_SETTING_NNN filler, the
-- same names as config_bench's).

local ffi = require "ffi"
local sys = require "zever.sys"
local config = require "zever.config"
local env = require "zever.config.env"
local read = require "zever.config.read"
local redact = require "zever.config.redact"

local scenario = os.getenv("SCENARIO") or "load"
local n = tonumber(arg and arg[1]) or 100
local FIXTURE = sys.home() .. "/spec/fixtures/config/full"

-- The pre-kit tree has no zever.cdef.libc: bench/prekit_libc.lua declares the two calls there.
if not pcall(require, "zever.cdef.libc") then
  local here_dir = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "bench"
  dofile(here_dir .. "/prekit_libc.lua")
end
local COMMON = { "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "PWD",
  "OLDPWD", "HOSTNAME", "EDITOR", "PAGER", "MAIL", "DISPLAY", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR",
  "LS_COLORS", "TMPDIR", "SHLVL", "GOPATH", "JAVA_HOME", "NODE_ENV", "CI", "DEBIAN_FRONTEND" }
ffi.C.clearenv()
local unrelated = {}
for i = 1, 100 do
  local name = COMMON[i] or string.format("ZZ_SETTING_%03d", i)
  ffi.C.setenv(name, "/usr/local/bin:/usr/bin:/bin", 1)
  unrelated[name] = "x"
end

local yaml_src = assert(io.open(FIXTURE .. "/zever.yaml")):read("*a")
local env_table = { DB_DSN = "sqlite::memory:", HTTP_WORKERS = "2", LOG_LEVEL = "debug" }
local cfg = config.defaults()
local function state() return { errors = {}, origin = {}, line = {}, applied = {} } end
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
local here = debug.getinfo(1, "S").source:match("^@(.*)/bench/[^/]*$") or "."
local prekit = dofile(here .. "/spec/fixtures/config/pre_kit_full.lua")

local run = {
  load = function()
    return assert(config.load{ dir = FIXTURE, env = env_table, environment = "production" })
  end,
  loadproc = function() return assert(config.load{ dir = FIXTURE, environment = "production" }) end,
  fast = function() return read.yaml(yaml_src, "zever.yaml") end,
  libyaml = function() return read.yaml_full(yaml_src, "zever.yaml") end,
  env100 = function() return env.apply(cfg, nil, state()) end,
  envtable = function() return env.apply(cfg, unrelated, state()) end,
  envgetenv = function() return env.apply(cfg, os.getenv, state()) end,
  redact50 = function() return redact.copy(fifty) end,
  redactfull = function() return config.redact(full) end,
  redactprekit = function() return config.redact(prekit) end,
}
local fn = assert(run[scenario], "unknown SCENARIO")
for _ = 1, n do fn() end
