-- adapters.mailer.smtp: delivers through an SMTP server (zever.smtp_core: a C state machine on
-- the worker's libuv loop, with STARTTLS or implicit TLS through OpenSSL and AUTH PLAIN/LOGIN).
--
--   local adapter = assert(require("adapters.mailer.smtp").new{ smtp_host = "mx.example.com",
--     smtp_port = 587, smtp_tls = "starttls", smtp_username = "u", smtp_password = "p",
--     timeout = 10, smtp_ca_file = "" })
--   adapter:send(msg, default_from, max_bytes) -> message_id | nil, err (a zever error)
--   smtp.open(section, ctx) = smtp.new(section): the adapter contract
--
-- The message is rendered (and validated) by zever.mime before anything is sent. Inside a
-- coroutine (a request, a job) a send yields until the server answered; outside one it runs
-- the loop until then, as zever.sleep does. One connection per adapter, kept open and reused;
-- concurrent senders queue behind each other. Codes: "invalid" (refused by the builder),
-- "rejected" (a 5xx from the server: a recipient, the sender or the message; nothing is
-- delivered when any recipient is refused), "unavailable" (cannot connect, TLS, AUTH, 4xx,
-- timeout, connection dropped), "closed". Messages never contain the password.

local core = require "zever.smtp_core"
local errors = require "zever.errors"
local mime = require "zever.mime"
local sched = require "zever.sched"

local setmetatable, tostring, remove = setmetatable, tostring, table.remove
local token_of, await, complete = sched.token, sched.await, sched.complete

local M = {}

local Smtp = {}
Smtp.__index = Smtp

local CLOSED = errors.binding("mailer", "closed", "the mailer is closed")

local function loopback(host)
  return host == "localhost" or host == "::1" or host == "[::1]" or host:match("^127%.") ~= nil
end

local function failure(message)
  return nil, errors.binding("mailer", "invalid", message)
end

-- new(section) -> adapter | nil, err. section: the mailer config section (smtp_host, smtp_port,
-- smtp_username, smtp_password, smtp_tls = "starttls" | "tls" | "none", smtp_ca_file, timeout).
function M.new(section)
  section = section or {}
  local host = section.smtp_host or "localhost"
  local enc = section.smtp_tls or "starttls"
  local user = section.smtp_username or ""
  if enc ~= "none" and enc ~= "starttls" and enc ~= "tls" then
    return failure("smtp_tls must be starttls, tls or none, got " .. tostring(enc))
  end
  if user ~= "" and enc == "none" and not loopback(host) then
    return failure("refusing to send SMTP credentials without TLS to " .. host ..
      " (smtp_tls = none is for loopback only)")
  end
  local ca = section.smtp_ca_file
  if ca == "" then ca = nil end
  local c, why = core.client({
    host = host, port = section.smtp_port or 587, encryption = enc,
    username = user ~= "" and user or nil, password = section.smtp_password or "",
    timeout = section.timeout or 10, ca_file = ca, helo = section.smtp_helo,
  }, complete)
  if not c then return failure(why) end
  return setmetatable({ c = c, busy = false, waiters = {}, closed = false }, Smtp)
end

local function message_id(bytes)
  local head = bytes:sub(1, (bytes:find("\r\n\r\n", 1, true) or #bytes))
  return head:match("\nMessage%-ID: *(<[^>\r\n]*>)") or head:match("^Message%-ID: *(<[^>\r\n]*>)")
end

-- Waits for this sender's turn on the connection: each waiter queues a token that release
-- completes.
local function acquire(self)
  while self.busy do
    local token = token_of()
    self.waiters[#self.waiters + 1] = token
    await(token)
  end
  self.busy = true
end

local function release(self)
  self.busy = false
  local nxt = remove(self.waiters, 1)
  if nxt then complete(nxt) end
end

function Smtp:send(msg, default_from, max_bytes)
  if self.closed then return nil, CLOSED end
  local bytes, env = mime.build(msg, { from = default_from, max_bytes = max_bytes })
  if not bytes then return nil, errors.binding("mailer", "invalid", env.message) end
  acquire(self)
  if self.closed then
    release(self)
    return nil, CLOSED
  end
  local token = token_of()
  local ok, message, kind = self.c:send(token, env.from, env.to, bytes)
  if ok then ok, message, kind = await(token) end
  release(self)
  if not ok then return nil, errors.binding("mailer", kind, message) end
  return message_id(bytes)
end

function Smtp:info()
  return self.c:info()
end

function Smtp:close()
  if self.closed then return end
  self.closed = true
  self.c:close()
end

M.open = M.new

return M
