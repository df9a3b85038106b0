-- zever.notification: the front-end of the notification battery (app.notification): messages
-- to a user on a channel (sms, push, chat, in-app, ...; email has app.mailer).
--
--   local notify = notification.new{ log_file = "log/notifications.jsonl" }   -- log adapter
--   notify:send{ to = "user:42", channel = "push", title = "Hi", body = "...", data = {...} }
--     -> id | nil, err
--
-- Checks (misuse raises): to a non-empty string or a number, channel 1..32 letters, digits, "_"
-- or "-", body a string (title optional), data a table; a body over 64 KiB or a title over
-- 1 KiB is an expected failure ("invalid"). Each notification gets an id (random, base64url) and
-- the time; the adapter gets { id, time, channel, to, title, body, data }.
--
-- Adapters: log (default: JSON lines, like the log mailer). notification.wrap(impl): impl:send(n)
-- -> true | nil, err.

local battery = require "zever.battery"
local crypto = require "zever.crypto"

local type, error, tostring, date, find = type, error, tostring, os.date, string.find

local M = {}

local Notifier = battery.define("notification", "the notifier is closed")
M.error = Notifier.error

local TOO_LONG = Notifier.error("invalid", "the body is over 64 KiB or the title over 1 KiB")

function Notifier:send(n)
  if type(n) ~= "table" then error("notification:send: expects a table", 2) end
  local to, channel, body, title, data = n.to, n.channel, n.body, n.title, n.data
  if type(to) == "number" then to = tostring(to) end
  if type(to) ~= "string" or to == "" then error("notification:send: to must be a non-empty string", 2) end
  if type(channel) ~= "string" or not find(channel, "^[%w_%-]+$") or #channel > 32 then
    error("notification:send: channel must be a name like \"push\"", 2)
  end
  if type(body) ~= "string" then error("notification:send: body must be a string", 2) end
  if title ~= nil and type(title) ~= "string" then error("notification:send: title must be a string", 2) end
  if data ~= nil and type(data) ~= "table" then error("notification:send: data must be a table", 2) end
  if self.closed then return nil, Notifier.CLOSED end
  if #body > 65536 or (title and #title > 1024) then return nil, TOO_LONG end
  local id = crypto.token(12)
  local ok, err = self.impl:send({ id = id, time = date("!%Y-%m-%dT%H:%M:%SZ"), channel = channel,
    to = to, title = title, body = body, data = data })
  if not ok then return nil, err end
  self.counters.sent = self.counters.sent + 1
  return id
end

function M.wrap(impl)
  if type(impl) ~= "table" or type(impl.send) ~= "function" then
    error("notification.wrap: expects an adapter object with send", 2)
  end
  return battery.object(Notifier, impl, { counters = { sent = 0 } })
end

function M.new(opts)
  return battery.default(M.wrap, "adapters.notification.log", "notification.new", opts)
end

return M
