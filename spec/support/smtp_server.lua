-- spec.support.smtp_server: the SMTP sink of the #smtp specs (spec/support/smtp_server.py,
-- python3-aiosmtpd) on a free loopback port, storing messages in a temporary folder.
--
--   local smtp_server = require "spec.support.smtp_server"
--   local srv = assert(smtp_server.start{ auth = "user:pass", tls = "starttls" | "tls",
--                                         reject = { "bad@example.com" }, mode = "silent",
--                                         only = "LOGIN" })
--   srv.port, srv.dir, srv.pid, srv.cert (the self-signed certificate, for ca_file)
--   srv:messages()   -> { { eml = bytes, from = "a@b.c", to = { ... } }, ... } in arrival order
--   srv:stop()       -- SIGTERM by PID, SIGKILL after 2 s; removes the folder; idempotent
--
-- The certificate is made at start with `openssl req -x509` (CN localhost, SAN localhost and
-- 127.0.0.1). The server is stopped by PID, never by name; when the spec process is killed by a
-- signal before it could, by a watchdog (process.watchdog).

local sys = require "zever.sys"
local json = require "zever.json"

local process = require "spec.support.process"
local fs = require "spec.support.files"

local quote, alive, free_port = process.quote, process.alive, process.free_port
local sh, sleep = process.output, process.sleep
local read = fs.slurp

local M = {}

local HERE = debug.getinfo(1, "S").source:sub(2):match("^(.*)/[^/]*$") or "."

local Server = {}
Server.__index = Server

function Server:messages()
  local out = {}
  for i = 1, 100000 do
    local eml = read(self.dir .. "/" .. i .. ".eml")
    if not eml then break end
    local meta = json.decode(read(self.dir .. "/" .. i .. ".json"))
    out[i] = { eml = eml, from = meta.from, to = meta.to }
  end
  return out
end

function Server:stop()
  local pid = self.pid
  self.pid = nil
  if pid then
    process.terminate(pid, "TERM", 2)
  end
  if self.dir then
    os.execute("rm -rf " .. quote(self.dir))
    self.dir = nil
  end
end

-- opts: port (default: a free one), auth = "user:pass", only = "PLAIN" | "LOGIN", tls =
-- "starttls" | "tls", reject = { addresses }, mode = "silent" | "drop-data". Returns the server
-- or nil, message.
function M.start(opts)
  opts = opts or {}
  local dir = sh("mktemp -d /tmp/zever-smtp.XXXXXX"):gsub("%s+$", "")
  local self = setmetatable({ dir = dir, port = opts.port or free_port() }, Server)
  local args = { "/usr/bin/python3", quote(HERE .. "/smtp_server.py"), "--port", self.port, "--dir",
    quote(dir) }
  if opts.auth then
    args[#args + 1] = "--auth " .. quote(opts.auth)
  end
  if opts.tls then
    self.cert, self.key = dir .. "/cert.pem", dir .. "/key.pem"
    sh("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost" ..
      " -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " .. quote(self.key) ..
      " -out " .. quote(self.cert))
    args[#args + 1] = "--cert " .. quote(self.cert) .. " --key " .. quote(self.key)
    if opts.tls == "tls" then args[#args + 1] = "--implicit" end
  end
  if opts.only then args[#args + 1] = "--only " .. quote(opts.only) end
  for _, r in ipairs(opts.reject or {}) do args[#args + 1] = "--reject " .. quote(r) end
  if opts.mode then args[#args + 1] = "--mode " .. quote(opts.mode) end
  local log = dir .. "/server.log"
  local pid = tonumber(sh(table.concat(args, " ") .. " > " .. quote(log) .. " 2>&1 & echo $!"))
  self.pid = pid
  local deadline = sys.now() + 10
  while sys.now() < deadline do
    local text = read(log) or ""
    if text:find("ready", 1, true) then
      process.watchdog(pid, "TERM", 2, dir)
      return self
    end
    if pid and not alive(pid) then break end
    sleep(0.05)
  end
  local text = read(log) or ""
  self:stop()
  return nil, "smtp_server.py did not start: " .. text:sub(-400)
end

return M
