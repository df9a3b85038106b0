-- zever.container: the batteries of one app in one worker, resolved lazily from config through
-- the adapter registry (zever.adapters), cached once resolved, and closed in dependency order.
--
--   local c = container.new(cfg[, { close_timeout = 5 }])
--   c:get("db")      -> battery | nil, err   resolves on first use; a failure is not cached
--   c:resolved(name) -> battery | nil        without resolving
--   c:close()        -> true | nil, errs     errs: one zever error (the first failure's battery
--                                            and code, a line per failure) holding each
--                                            failure at errs[1..n]; a second close returns true
--
-- Shared connections: adapters ask ctx:shared(kind, key, open, close) for a connection; one is
-- opened per identical (kind, key) -- a DSN, a Redis URL -- per Lua state (= per worker) and
-- reference-counted across every container of that worker; the last release closes it.
--
-- Close order: dependents first. Tier 1 scheduler, jobs; tier 2 mailer, limiter, idempotency,
-- search, vectors (and batteries of other names); tier 3 cache, queue; tier 4 db; tier 5 log.
-- Within a tier, the most recently resolved closes first. Only resolved batteries are closed.
--
-- Timeouts: each battery's close() runs in a coroutine (zever.sched). If it returns without
-- waiting, its elapsed time is measured and an overrun of the timeout is reported as an error
-- (a synchronous call cannot be interrupted). If it waits (yields to the loop: Redis QUIT, an
-- SMTP goodbye, a drain), the container waits for it on the event loop at most the timeout,
-- then reports code "timeout" and moves on; the abandoned coroutine may finish later.
-- The wait is zever.sched's (a token: inside a coroutine the container yields, outside one,
-- the CLI, it runs the loop). Errors are zever errors. It must not know any adapter.
--
-- Errors never carry a secret: every message from an adapter is scrubbed against the config's
-- secret values (zever.config.scrub) before it is returned.

-- zever.adapters (the registry), zever.config.redact and zever.sched are required where they are
-- used: building a container is part of loading every app (app:config()), resolving a battery
-- and closing one are not (an app that never touches a battery never loads them).
local errors = require "zever.errors"
local sys = require "zever.sys"

local type, error, ipairs, pcall, tostring, setmetatable, format, concat, sort =
  type, error, ipairs, pcall, tostring, setmetatable, string.format, table.concat, table.sort
local running = coroutine.running

local M = {}

local TIER = { scheduler = 1, jobs = 1, cache = 3, queue = 3, db = 4, log = 5 }
M.TIER = TIER

-- Messages start with the battery's name ("cache: ..."): a zever error prints them as they are.
local new_error = errors.new

-- Several close failures: one zever error (the first's battery and code) whose message has a
-- line per failure, with the failures themselves at [1], [2], ...
local function error_list(list)
  local lines = {}
  for i, e in ipairs(list) do lines[i] = e.message end
  return errors.new(list[1].battery, list[1].code, concat(lines, "\n"), list)
end

-- --- shared connections, per Lua state (= per worker) ---------------------------------------

local shared = {}   -- shared[kind .. "\0" .. key] = { conn, refs, close }
local is_shared = setmetatable({}, { __mode = "k" })   -- conn -> true

M._shared = shared

local Container = {}
Container.__index = Container

local Ctx = {}
Ctx.__index = Ctx

function Ctx:get(name)
  return self.container:get(name)
end

function Ctx:shared(kind, key, open, close)
  if type(kind) ~= "string" or type(key) ~= "string" then
    error("ctx:shared: kind and key must be strings", 2)
  end
  local id = kind .. "\0" .. key
  local s = shared[id]
  if not s then
    local conn, err = open()
    if conn == nil then return nil, err end
    s = { conn = conn, refs = 0, close = close }
    shared[id] = s
    if type(conn) == "table" or type(conn) == "userdata" then is_shared[conn] = true end
  end
  s.refs = s.refs + 1
  local held = self.container.held
  held[#held + 1] = id
  return s.conn
end

local function release(id)
  local s = shared[id]
  if not s then return true end
  s.refs = s.refs - 1
  if s.refs > 0 then return true end
  shared[id] = nil
  if s.close then s.close(s.conn) end
  return true
end

-- --- the container ---------------------------------------------------------------------------

function M.new(cfg, opts)
  if type(cfg) ~= "table" then error("container.new: expects a config table", 2) end
  if opts ~= nil and type(opts) ~= "table" then error("container.new: opts must be a table", 2) end
  local timeout = opts and opts.close_timeout or 5
  if type(timeout) ~= "number" or timeout <= 0 then
    error("container.new: close_timeout must be a positive number of seconds", 2)
  end
  return setmetatable({
    config = cfg,
    close_timeout = timeout,
    batteries = {},     -- name -> battery
    order = {},         -- names in resolve order
    holds = {},         -- name -> { shared ids }
    pending = {},       -- name -> { waiting coroutines } while a resolve waits
    held = nil,
    closed = false,
    secrets = nil,
  }, Container)
end

function Container:scrub(msg)
  local redact = require "zever.config.redact"
  if not self.secrets then self.secrets = redact.secrets(self.config) end
  return redact.scrub(msg, self.secrets)
end

function Container:resolved(name)
  return self.batteries[name]
end

local function err_text(err)
  if type(err) == "table" and err.message then return tostring(err.message) end
  return tostring(err)
end

-- Resolves name: the factory runs at most once at a time per battery.
local function resolve(self, name)
  local section = self.config[name]
  if type(section) ~= "table" or type(section.adapter) ~= "string" then
    return nil, new_error(name, "invalid", format('%s: no such battery in the config', name))
  end
  local entry, err = require("zever.adapters").get(name, section.adapter)
  if not entry then return nil, new_error(name, "invalid", err.message) end
  local outer = self.held
  local held = {}
  self.held = held
  local ctx = setmetatable({ container = self, config = self.config }, Ctx)
  local ok, battery, ferr = pcall(entry.factory, section, ctx)
  self.held = outer
  if not ok or battery == nil then
    for _, id in ipairs(held) do pcall(release, id) end
    local cause = not ok and battery or ferr
    local code = type(cause) == "table" and cause.code or (ok and "unavailable" or "error")
    local text = err_text(cause or "the adapter returned nothing")
    if text:sub(1, #name + 2) ~= name .. ": " then text = name .. ": " .. text end
    return nil, new_error(name, code, self:scrub(text))
  end
  self.holds[name] = held
  return battery
end

function Container:get(name)
  local b = self.batteries[name]
  if b ~= nil then return b end
  if type(name) ~= "string" then error("container:get: battery name must be a string", 2) end
  if self.closed then return nil, new_error(name, "closed", name .. ": the container is closed") end
  local waiting = self.pending[name]
  if waiting then
    local co = running()
    if not co or waiting.owner == co then
      return nil, new_error(name, "invalid", name .. ": resolving it needs itself (a dependency cycle)")
    end
    waiting[#waiting + 1] = co
    return require("zever.sched").await(co)
  end
  waiting = { owner = running() }
  self.pending[name] = waiting
  local battery, err = resolve(self, name)
  self.pending[name] = nil
  if battery ~= nil then
    if self.closed then
      -- closed while resolving: give it back at once
      if type(battery) == "table" and type(battery.close) == "function" and not is_shared[battery] then
        pcall(battery.close, battery)
      end
      for _, id in ipairs(self.holds[name] or {}) do pcall(release, id) end
      battery, err = nil, new_error(name, "closed", name .. ": the container is closed")
    else
      self.batteries[name] = battery
      self.order[#self.order + 1] = name
    end
  end
  if waiting[1] then
    local sched = require "zever.sched"
    for _, co in ipairs(waiting) do sched.complete(co, battery, err) end
  end
  return battery, err
end

-- Completes the wait of st (once: the close and the deadline race).
local function finish(st)
  local token = st.token
  if token then
    st.token = nil
    require("zever.sched").complete(token)
  end
end

-- Runs fn() with a deadline. Returns ok, err_message, timed_out, elapsed.
local function with_timeout(fn, timeout)
  local sched = require "zever.sched"
  local st = { done = false }
  local t0 = sys.now()
  sched.spawn(function()
    local ok, err = pcall(fn)
    st.done, st.ok, st.err = true, ok, err
    finish(st)
  end)
  if not st.done then
    local token = sched.token()
    st.token = token
    local timer = require("zever.loop").after(timeout, function()
      st.expired = true
      finish(st)
    end)
    sched.await(token)
    timer:stop()
    if not st.done then return false, nil, true, sys.now() - t0 end
  end
  return st.ok, st.err, false, sys.now() - t0
end

local function secs(x)
  if x >= 1 then return format("%.1f s", x) end
  return format("%.0f ms", x * 1000)
end

function Container:close()
  if self.closed then return true end
  self.closed = true
  local names = {}
  for i, name in ipairs(self.order) do names[i] = { name = name, at = i } end
  sort(names, function(a, b)
    local ta, tb = TIER[a.name] or 2, TIER[b.name] or 2
    if ta ~= tb then return ta < tb end
    return a.at > b.at
  end)
  local errs = {}
  local timeout = self.close_timeout
  for _, item in ipairs(names) do
    local name = item.name
    local b = self.batteries[name]
    local held = self.holds[name] or {}
    -- A battery that is itself a shared connection is closed by its last release.
    local own = type(b) == "table" and type(b.close) == "function" and not is_shared[b]
    if own or #held > 0 then
      local ok, err, timed_out, elapsed = with_timeout(function()
        if own then
          local r, e = b:close()
          if r == nil and e ~= nil then error(e, 0) end
        end
        local first
        for _, id in ipairs(held) do
          local okr, e = pcall(release, id)
          if not okr and first == nil then first = e end
        end
        if first ~= nil then error(first, 0) end
      end, timeout)
      if timed_out then
        errs[#errs + 1] = new_error(name, "timeout",
          format("%s: close did not finish within %s", name, secs(timeout)))
      elseif not ok then
        errs[#errs + 1] = new_error(name, type(err) == "table" and err.code or "error",
          self:scrub(name .. ": close failed: " .. err_text(err)))
      elseif elapsed > timeout then
        errs[#errs + 1] = new_error(name, "timeout",
          format("%s: close took %s, over its %s timeout", name, secs(elapsed), secs(timeout)))
      end
    end
    self.batteries[name] = nil
  end
  self.order, self.holds = {}, {}
  if #errs > 0 then return nil, error_list(errs) end
  return true
end

return M
