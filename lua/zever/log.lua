-- zever.log: the log battery's text and JSON loggers.
--
--   local log = require("zever.log").new{ format = "text" | "json", level = "info", out = io.stderr }
--   log:info("listening", { addr = "127.0.0.1:8080" })
--   log:error("handler failed", { error = err })
--
-- One line per entry, written with a single write call so lines from several worker threads
-- do not interleave. Text: "2026-11-29T22:54:38Z INFO listening addr=127.0.0.1:8080" (fields
-- sorted); JSON: {"time":...,"level":"info","msg":...,<fields>}. When stderr is the journal
-- (zever.systemd.journal: JOURNAL_STREAM names it), text lines to stderr drop the date, which
-- the journal records, and start with the syslog priority: "<6>INFO listening addr=...".
--
-- Context: log.set_context(fields) adds fields to every line logged from the current coroutine
-- (a request's, until it is set again or cleared with nil); zever.middleware.request_id puts
-- { request_id = id } there, so every line of a request names it. A line's own fields win.

local json = require "zever.json"

local format, concat, sort, date, type, tostring, pairs = string.format, table.concat, table.sort,
  os.date, type, tostring, pairs

local M = {}

local running = coroutine.running
local contexts = setmetatable({}, { __mode = "k" })

-- Sets (or with nil clears) the fields added to the lines of the current coroutine.
function M.set_context(fields)
  if fields ~= nil and type(fields) ~= "table" then error("log.set_context wants a table or nil", 2) end
  local co = running()
  if co then contexts[co] = fields end
end

-- The current coroutine's context fields, or nil.
function M.context()
  local co = running()
  return co and contexts[co]
end

local LEVELS = { debug = 10, info = 20, warn = 30, error = 40, off = 100 }

local Logger = {}
Logger.__index = Logger

local function text_value(v)
  v = tostring(v)
  if v:find("[%s\"=]") or v == "" then return format("%q", v):gsub("\\\n", "\\n") end
  return v
end

local function render_text(level, msg, fields)
  local parts = { date("!%Y-%m-%dT%H:%M:%SZ"), level:upper(), msg }
  if fields then
    local keys = {}
    for k in pairs(fields) do keys[#keys + 1] = tostring(k) end
    sort(keys)
    for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. text_value(fields[k]) end
  end
  return concat(parts, " ") .. "\n"
end

-- stderr is the journal (systemd's JOURNAL_STREAM): it stamps the time itself and reads the
-- priority from a "<N>" prefix (sd-daemon(3)), so text lines carry that instead of a date.
local function render_journal(level, msg, fields)
  local line = render_text(level, msg, fields)
  return require("zever.systemd").priority(level) .. line:sub(22)
end

local function render_json(level, msg, fields)
  local entry = { time = date("!%Y-%m-%dT%H:%M:%SZ"), level = level, msg = msg }
  if fields then
    for k, v in pairs(fields) do
      if entry[k] == nil then
        local t = type(v)
        entry[k] = (t == "number" or t == "boolean" or t == "string") and v or tostring(v)
      end
    end
  end
  return json.encode(entry) .. "\n"
end

function M.new(opts)
  opts = opts or {}
  local fmt = opts.format or "text"
  if fmt ~= "text" and fmt ~= "json" then error('log format must be "text" or "json"', 2) end
  local level = opts.level or "info"
  if not LEVELS[level] then error("unknown log level " .. tostring(level), 2) end
  return setmetatable({
    render = fmt == "json" and render_json or
      ((opts.out == nil or opts.out == io.stderr) and require("zever.systemd").journal() and
        render_journal or render_text),
    min = LEVELS[level],
    out = opts.out or io.stderr,
  }, Logger)
end

function Logger:log(level, msg, fields)
  if (LEVELS[level] or 0) < self.min then return end
  local co = running()
  local ctx = co and contexts[co]
  if ctx then
    local merged = {}
    for k, v in pairs(ctx) do merged[k] = v end
    for k, v in pairs(fields or {}) do merged[k] = v end
    fields = merged
  end
  self.out:write(self.render(level, tostring(msg), fields))
end

for name in pairs(LEVELS) do
  if name ~= "off" then
    Logger[name] = function(self, msg, fields) return self:log(name, msg, fields) end
  end
end

function Logger:enabled(level)
  return (LEVELS[level] or 0) >= self.min
end

return M
