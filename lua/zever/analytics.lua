-- zever.analytics: the front-end of the analytics battery (app.analytics): product events in
-- the shape of Segment's tracking API.
--
--   local a = analytics.new{ log_file = "log/analytics.jsonl" }      -- log adapter
--   a:track(event, { user_id = "42" | anonymous_id = "...", properties = {...} }) -> id | nil, err
--   a:identify(user_id, traits)                                      -> id | nil, err
--
-- Checks (misuse raises): event a non-empty string of at most 200 bytes, a user_id or an
-- anonymous_id (strings or numbers) on track, properties and traits tables. Each call gets an
-- id and the time. Adapters: log (default: JSON lines). analytics.wrap(impl): impl:record(e)
-- -> true | nil, err.

local battery = require "zever.battery"
local crypto = require "zever.crypto"

local type, error, tostring, date = type, error, tostring, os.date

local M = {}

local Analytics = battery.define("analytics", "analytics is closed")
M.error = Analytics.error

local function id_of(v, fname, what)
  if v == nil then return nil end
  if type(v) == "number" then return tostring(v) end
  if type(v) ~= "string" or v == "" then error(fname .. ": " .. what .. " must be a string", 3) end
  return v
end

local function record(self, e)
  if self.closed then return nil, Analytics.CLOSED end
  e.id, e.time = crypto.token(12), date("!%Y-%m-%dT%H:%M:%SZ")
  local ok, err = self.impl:record(e)
  if not ok then return nil, err end
  self.counters.events = self.counters.events + 1
  return e.id
end

function Analytics:track(event, opts)
  if type(event) ~= "string" or event == "" or #event > 200 then
    error("analytics:track: event must be a non-empty string (at most 200 bytes)", 2)
  end
  if type(opts) ~= "table" then
    error("analytics:track: opts must be a table with user_id or anonymous_id", 2)
  end
  local user, anon = id_of(opts.user_id, "analytics:track", "user_id"),
    id_of(opts.anonymous_id, "analytics:track", "anonymous_id")
  if not user and not anon then error("analytics:track: needs user_id or anonymous_id", 2) end
  battery.opt_table(opts.properties, "analytics:track", "properties")
  return record(self, { type = "track", event = event, user_id = user, anonymous_id = anon,
    properties = opts.properties })
end

function Analytics:identify(user_id, traits)
  local user = id_of(user_id, "analytics:identify", "user_id")
  if not user then error("analytics:identify: user_id must be a string", 2) end
  battery.opt_table(traits, "analytics:identify", "traits")
  return record(self, { type = "identify", user_id = user, traits = traits })
end

function M.wrap(impl)
  if type(impl) ~= "table" or type(impl.record) ~= "function" then
    error("analytics.wrap: expects an adapter object with record", 2)
  end
  return battery.object(Analytics, impl, { counters = { events = 0 } })
end

function M.new(opts)
  return battery.default(M.wrap, "adapters.analytics.log", "analytics.new", opts)
end

return M
