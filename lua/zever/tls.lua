-- zever.tls: TLS for `zever serve` (host/tls/, OpenSSL, loaded on first require; docs/tls.md).
--
--   tls.context{ cert =, key =, min_version = "1.2", ciphers =, alpn = "http/1.1", h2 = false,
--                ocsp = nil }   ocsp: a DER OCSP response file to staple (checked when loaded)
--       h2 = true: an HTTP/2 layer (zever.h2) will run over it; ALPN then offers "h2,http/1.1"
--       -> context | nil, err     err: a zever error ("tls", "invalid"): a missing or unreadable
--                                 file, a key that does not match, an expired certificate, ...
--                                 (the message names files, never key material)
--   context:info()  -> subject, not_after (Unix time)
--   tls.version()   -> OpenSSL's version text
--   tls.redirect(https_port) -> an http.listen handler that answers every request with a
--       redirect to the same host and path over HTTPS (301 for GET and HEAD, 308 otherwise)
--
-- zever.http takes a context as http.listen{tls = context}: every connection of that server is
-- then TLS (host/http/xport.h). Resumption is by session tickets whose keys are the process's,
-- shared by all workers, rotated hourly.

local core = require "zever.tls_core"
local errors = require "zever.errors"

local type, tostring, format = type, tostring, string.format

local M = {}

local FIELDS = { "cert", "key", "min_version", "ciphers", "alpn", "ocsp" }

function M.context(opts)
  if type(opts) ~= "table" then error("tls.context: want a table of options", 2) end
  local o = {}
  for _, k in ipairs(FIELDS) do
    local v = opts[k]
    if v ~= nil and v ~= "" then
      if type(v) == "table" then v = table.concat(v, ",") end
      if type(v) ~= "string" then error("tls.context: " .. k .. " must be a string", 2) end
      o[k] = v
    end
  end
  o.h2 = opts.h2 and true or nil
  local ctx, msg = core.context(o)
  if not ctx then return nil, errors.new("tls", "invalid", msg) end
  return ctx
end

M.version = core.version

local NOBODY = ""

function M.redirect(https_port)
  local suffix = (https_port and https_port ~= 443) and (":" .. tostring(https_port)) or ""
  return function(creq, method, path, query)
    local host = creq:header("host")
    -- The host without its port; an IPv6 literal keeps its brackets.
    host = host and (host:match("^(%[[%x:.]+%])") or host:match("^([%w.%-]+)"))
    if not host then
      creq:respond(400, '{"error":"bad_request"}', { "Content-Type", "application/json" })
      return
    end
    local loc = format("https://%s%s%s%s", host, suffix, path, query and ("?" .. query) or "")
    local code = (method == "GET" or method == "HEAD") and 301 or 308
    creq:respond(code, NOBODY, { "Location", loc })
  end
end

return M
