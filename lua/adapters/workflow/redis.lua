-- adapters.workflow.redis: workflow runs, step results and signals on a Redis server, shared by
-- every process that uses the server with the same prefix. The same calls as
-- adapters.workflow.memory; every change of state is ONE script (EVALSHA) or one command,
-- atomic on the server: recording a step and the run's step list together is one round trip,
-- so a worker killed between two calls leaves either both or neither.
--
--   <p>r:<id>     hash   id, name, status, input, output, error, attempts, state, wake_at,
--                        created_at, updated_at (the run)
--   <p>s:<id>     hash   step key -> result (HSETNX: a step's result is recorded once, a
--                        second writer keeps the first)
--   <p>g:<id>     list   the run's signals, each a JSON array [seq, name, value]
--   <p>seq        string the signals' sequence (INCR)
--   <p>all        zset   run ids by created_at (list)
--   <p>st:<status> zset  run ids of a status by created_at (list --status), kept by the scripts
--   <p>exp        zset   ended run ids by expire_at (the sweep), kept by the scripts
--   <p>ended      zset   ended run ids by ended_at (purge --before), kept by the scripts
--
-- The scripts name the status sets from the prefix they are given (ARGV), not as KEYS: one
-- Redis server, not a cluster. An ended run is deleted by the sweep (SWEEP: its hash, steps,
-- signals and set entries, at most a batch per script) once its expire_at passed, or by purge;
-- no key carries a Redis TTL, so the sets never name a missing run. A connection failure
-- raises a zever error "unavailable" (the job running the step fails and is retried), as a
-- database error does in adapters.workflow.db. Argument checks belong to the front-end.

local redis_client = require "adapters.redis_client"
local json = require "zever.json"

local setmetatable, tonumber, format, select, error = setmetatable, tonumber, string.format,
  select, error

local M = {}

-- Applies ARGV[first..] (field, "=value" to set or "-" to delete) to the run hash run, moving the
-- id between the status sets (prefix stp) when the status changes, and keeping the sweep's sets
-- (<p>exp, <p>ended: stp without its "st:") for expire_at and ended_at. 0 when the run is missing.
local APPLY = [[
local TIMES = { expire_at = 'exp', ended_at = 'ended' }
local function apply(run, stp, id, first)
  if redis.call('EXISTS', run) == 0 then return 0 end
  local base = string.sub(stp, 1, #stp - 3)
  for i = first, #ARGV, 2 do
    local f, v = ARGV[i], ARGV[i + 1]
    if string.sub(v, 1, 1) == '-' then
      redis.call('HDEL', run, f)
      if TIMES[f] then redis.call('ZREM', base .. TIMES[f], id) end
    else
      v = string.sub(v, 2)
      if f == 'status' then
        local old = redis.call('HGET', run, 'status')
        if old ~= v then
          if old then redis.call('ZREM', stp .. old, id) end
          redis.call('ZADD', stp .. v, redis.call('HGET', run, 'created_at'), id)
        end
      end
      if TIMES[f] then redis.call('ZADD', base .. TIMES[f], v, id) end
      redis.call('HSET', run, f, v)
    end
  end
  return 1
end
]]

-- KEYS[1] the run, KEYS[2] all, KEYS[3] the pending set; ARGV id, name, input, now[, retention].
-- 1 | 0.
M.CREATE = [[
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'name', ARGV[2], 'status', 'pending', 'input', ARGV[3],
  'attempts', 0, 'created_at', ARGV[4], 'updated_at', ARGV[4])
if ARGV[5] then redis.call('HSET', KEYS[1], 'retention', ARGV[5]) end
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return 1
]]

-- KEYS[1] the run; ARGV[1] the status sets' prefix, ARGV[2] the id, then field/value pairs.
M.UPDATE = APPLY .. [[
return apply(KEYS[1], ARGV[1], ARGV[2], 3)
]]

-- KEYS[1] the run, KEYS[2] its steps; ARGV[1] the status sets' prefix, ARGV[2] the id,
-- ARGV[3] the step key, ARGV[4] the result, then the run's field/value pairs. 1 when recorded,
-- 0 when the step was recorded already (the run is left alone then).
M.RECORD = APPLY .. [[
if redis.call('HSETNX', KEYS[2], ARGV[3], ARGV[4]) == 0 then return 0 end
apply(KEYS[1], ARGV[1], ARGV[2], 5)
return 1
]]

-- KEYS[1] the run's signals, KEYS[2] the sequence; ARGV name, value. The new seq.
M.SIGNAL = [[
local seq = redis.call('INCR', KEYS[2])
redis.call('RPUSH', KEYS[1], cjson.encode({ seq, ARGV[1], ARGV[2] }))
return seq
]]

-- KEYS[1] the set swept (<p>exp or <p>ended); ARGV the prefix, the cutoff, the limit. Deletes
-- at most limit runs scored <= cutoff, lowest first, with their steps, signals and set entries;
-- returns { deleted, how many more are scored <= cutoff }.
M.SWEEP = [[
local p = ARGV[1]
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  local run = p .. 'r:' .. id
  local status = redis.call('HGET', run, 'status')
  if status then redis.call('ZREM', p .. 'st:' .. status, id) end
  redis.call('DEL', run, p .. 's:' .. id, p .. 'g:' .. id)
  redis.call('ZREM', p .. 'all', id)
  redis.call('ZREM', p .. 'exp', id)
  redis.call('ZREM', p .. 'ended', id)
end
return { #ids, redis.call('ZCOUNT', KEYS[1], '-inf', ARGV[2]) }
]]

local NUMBERS = { attempts = true, wake_at = true, created_at = true, updated_at = true,
  retention = true, ended_at = true, expire_at = true }
local COLUMNS = { "status", "input", "output", "error", "attempts", "state", "wake_at",
  "updated_at", "ended_at", "expire_at" }
local SETS = { expire_at = "exp", ended_at = "ended" }

local D = {}
D.__index = D

local unavailable = redis_client.failer("workflow")

-- A reply, or a raised "unavailable" error when the call failed.
local function check(r, err)
  if err ~= nil then error(select(2, unavailable(err)), 0) end
  return r
end

local function text(v)
  if type(v) == "number" then return format("%.17g", v) end
  return tostring(v)
end

-- The ARGV pairs of an update: "=value" sets the field, "-" deletes it (the store's null).
local function pairs_of(self, fields, argv)
  for _, c in ipairs(COLUMNS) do
    local v = fields[c]
    if v ~= nil then
      argv[#argv + 1] = c
      argv[#argv + 1] = v == self.null and "-" or "=" .. text(v)
    end
  end
  return argv
end

local function hash(flat)
  local t = {}
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end

local function run_of(flat)
  if #flat == 0 then return nil end
  local r = hash(flat)
  for k in pairs(NUMBERS) do if r[k] then r[k] = tonumber(r[k]) end end
  return r
end

function D:create(id, name, input, now, retention)
  local p = self.prefix
  return check(self.create_script:call({ p .. "r:" .. id, p .. "all", p .. "st:pending" },
    { id, name, input, text(now), retention and text(retention) or nil })) == 1
end

function D:get(id)
  return run_of(check(self.client:call("HGETALL", self.prefix .. "r:" .. id)))
end

function D:update(id, fields)
  local p = self.prefix
  return check(self.update_script:call({ p .. "r:" .. id },
    pairs_of(self, fields, { p .. "st:", id }))) == 1
end

function D:steps(id)
  return hash(check(self.client:call("HGETALL", self.prefix .. "s:" .. id)))
end

function D:put_step(id, key, result)
  return check(self.client:call("HSETNX", self.prefix .. "s:" .. id, key, result)) == 1
end

function D:record_step(id, key, result, fields)
  local p = self.prefix
  return check(self.record_script:call({ p .. "r:" .. id, p .. "s:" .. id },
    pairs_of(self, fields, { p .. "st:", id, key, result }))) == 1
end

function D:add_signal(id, name, value)
  return check(self.signal_script:call({ self.prefix .. "g:" .. id, self.prefix .. "seq" },
    { name, value }))
end

function D:signals(id)
  local out = {}
  for i, s in ipairs(check(self.client:call("LRANGE", self.prefix .. "g:" .. id, 0, -1))) do
    local a = json.decode(s)
    out[i] = { seq = a[1], name = a[2], value = a[3] }
  end
  return out
end

function D:list(status, limit)
  local ids = check(self.client:call("ZRANGE", self.prefix .. (status and "st:" .. status or "all"),
    0, limit - 1))
  if #ids == 0 then return {} end
  local cmds = {}
  for i, id in ipairs(ids) do cmds[i] = { "HGETALL", self.prefix .. "r:" .. id } end
  local out = {}
  for _, flat in ipairs(check(self.client:call_many(cmds))) do
    local r = run_of(flat)
    if r then out[#out + 1] = r end
  end
  return out
end

local function set_of(self, field)
  local s = SETS[field]
  if not s then error("workflow.redis: sweep by expire_at or ended_at", 3) end
  return self.prefix .. s
end

function D:sweep(field, cutoff, limit)
  local r = check(self.sweep_script:call({ set_of(self, field) },
    { self.prefix, text(cutoff), tostring(limit) }))
  return r[1], r[2]
end

function D:count_ended(field, cutoff)
  return check(self.client:call("ZCOUNT", set_of(self, field), "-inf", text(cutoff)))
end

D.close = redis_client.close

-- opts: url (the worker's shared client for it) or client (one the caller owns); prefix
-- ("zever:workflow:"), timeout. nil, err for an invalid url.
function M.new(opts)
  local self, err = redis_client.new("workflow.redis", opts, "workflow", "zever:workflow:")
  if not self then return nil, err end
  local c = self.client
  self.create_script, self.update_script = c:script(M.CREATE), c:script(M.UPDATE)
  self.record_script, self.signal_script = c:script(M.RECORD), c:script(M.SIGNAL)
  self.sweep_script = c:script(M.SWEEP)
  self.null = {}
  return setmetatable(self, D)
end

M.open = redis_client.opener(M.new)

return M
