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
-- An adapter is an object with send(msg, default_from, max_bytes) -> id | nil, kind, message
-- (kind: "misuse", "invalid", "unavailable", "rejected", "closed") and close(). It must render through the
-- MIME builder (zever.mime or the C core) so that every adapter validates the same way.

local type, error, setmetatable, tostring = type, error, setmetatable, tostring

local M = {}

local Error = {}
Error.__index = Error
Error.__tostring = function(e) return e.message end

local function fail(code, message)
  return nil, setmetatable({ code = code, message = message }, Error)
end

local Mailer = {}
Mailer.__index = Mailer

-- new(adapter[, { from = "...", max_bytes = n }]): section is the mailer config section.
function M.new(adapter, section)
  if type(adapter) ~= "table" or type(adapter.send) ~= "function" then
    error("mailer.new: adapter must have a send method", 2)
  end
  section = section or {}
  local from = section.from
  if from == "" then from = nil end
  return setmetatable({ adapter = adapter, from = from, max_bytes = section.max_bytes,
    closed = false }, Mailer)
end

function Mailer:send(msg)
  if type(msg) ~= "table" then error("mailer:send: the message must be a table", 2) end
  if self.closed then return fail("closed", "mailer: closed") end
  local id, kind, message = self.adapter:send(msg, self.from, self.max_bytes)
  if id then return id end
  if kind == "misuse" then error("mailer:send: " .. tostring(message), 2) end
  if kind == "nomem" then error("mailer:send: out of memory", 2) end
  return fail(kind or "unavailable", "mailer: " .. tostring(message))
end

function Mailer:close()
  if self.closed then return true end
  self.closed = true
  if self.adapter.close then self.adapter:close() end
  return true
end

return M
