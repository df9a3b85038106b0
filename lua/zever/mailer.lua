-- zever.mailer: the mailer battery's front-end. app.mailer is one of these, around an adapter
-- (lua/adapters/mailer/<name>.lua) that the container picked from config.
--
--   local id, err = app.mailer:send{ from, to, cc, bcc, reply_to, subject, text, html,
--                                    attachments = { { filename, content_type, data } },
--                                    headers = { ["X-Campaign"] = "w48" } }
--   -- id: the Message-ID ("<...@x.io>"); or nil, err with err.code:
--   --   "invalid"      a bad address, CR/LF in a header (injection), bad UTF-8, over the size
--   --                  cap (mailer.max_bytes, default 10 MiB), no recipient, no From
--   --   "unavailable"  the adapter could not deliver (log file not writable, SMTP down, a 4xx
--   --                  reply, a timeout): trying again later may work
--   --   "rejected"     the SMTP server refused the message or a recipient for good (a 5xx reply)
--   --   "closed"       after close()
--   app.mailer:close()
--
-- The message table is the one zever.mime.build takes (see there); from defaults to
-- mailer.from of the config. Every check runs before anything is sent. A wrong type (msg not a
-- table, to a number, attachment data missing) raises with the caller blamed.
--
-- An adapter (adapters.mailer.<name>: open(section, ctx) -> adapter | nil, err) is an object
-- with send(msg, default_from, max_bytes) -> id | nil, err (a zever error: "invalid",
-- "unavailable", "rejected", "closed"; "misuse" and "nomem", which this front-end raises) and
-- close(). It must render through the MIME builder (zever.mime or the C core) so that every
-- adapter validates the same way. The front-end is declared with zever.battery.

local battery = require "zever.battery"

local type, error = type, error

local M = {}

local Mailer = battery.define("mailer", "mailer: closed")
local CLOSED = Mailer.CLOSED

-- new(adapter[, { from = "...", max_bytes = n }]): section is the mailer config section.
function M.new(adapter, section)
  if type(adapter) ~= "table" or type(adapter.send) ~= "function" then
    error("mailer.new: adapter must have a send method", 2)
  end
  section = section or {}
  local from = section.from
  if from == "" then from = nil end
  return battery.object(Mailer, adapter, { adapter = adapter, from = from,
    max_bytes = section.max_bytes })
end
M.wrap = M.new

function Mailer:send(msg)
  if type(msg) ~= "table" then error("mailer:send: the message must be a table", 2) end
  if self.closed then return nil, CLOSED end
  local id, err = self.impl:send(msg, self.from, self.max_bytes)
  if id then return id end
  local code = err.code
  if code == "misuse" then error("mailer:send: " .. err.detail, 2) end
  if code == "nomem" then error("mailer:send: out of memory", 2) end
  return nil, err
end

return M
