-- zever.webhook: outgoing webhooks (endpoints registered per event, deliveries fanned out as
-- jobs with retries and a dead-letter list) and the signature scheme both ways: HMAC-SHA256 over
-- a timestamp and the body, Stripe's, with a replay window for incoming webhooks.
--
--   local hooks = webhook.new{ jobs = app.jobs, send = fn }      -- memory endpoint store
--   (app.webhook with webhook.adapter: db keeps the endpoints in the app's database)
--   hooks:register(event, url, secret)  -> id | nil, err      event: a name or "*"
--   hooks:unregister(id)                -> true | false
--   hooks:endpoints([event])            -> list of { id, event, url } (never the secrets)
--   hooks:deliver(event, payload)       -> n deliveries dispatched | nil, err
--
--   webhook.sign(secret, body[, t])     -> 't=<unix seconds>,v1=<hex HMAC-SHA256>'
--   webhook.verify(secret | {secrets}, body, header[, { tolerance = 300, now = s }])
--                                       -> true | nil, err   ("invalid" or "expired")
--   webhook.HEADER                      "Zever-Signature"
--
-- Signing (Stripe's scheme): v1 = hex(HMAC-SHA256(secret, t .. "." .. body)) where t is the
-- Unix time of the send; the request carries the header Zever-Signature: t=...,v1=... plus
-- Zever-Event and Zever-Delivery (a unique id: receivers deduplicate by it, deliveries are at
-- least once). verify parses the header, recomputes v1 with each given secret (several during
-- a secret's rotation), compares in constant time (crypto.equal), and refuses a timestamp more
-- than tolerance seconds (300) away from now: a captured request cannot be replayed later.
--
-- Delivery: deliver dispatches one job "zever.webhook" per endpoint registered for the event
-- (or for "*"), whose args carry the endpoint id, the event, the JSON body and the delivery
-- id; the job looks the endpoint up, signs at send time, and calls send(url, headers, body)
-- -> status | nil, err. A status outside 2xx, an error or a raise fails the job: the jobs
-- battery retries it with backoff (attempts 8, base 30 s, cap 1 h by default) and then
-- dead-letters it (app.jobs:failed(), `zever jobs failed|retry`: the dead-letter list and its
-- requeue). An endpoint unregistered meanwhile makes its pending deliveries no-ops. send is
-- the HTTP POST: by default zever.httpc (webhook.http_send: 10 s, no redirects); a test or an
-- app with its own transport passes send = fn.

local battery = require "zever.battery"
local crypto = require "zever.crypto"
local json = require "zever.json"
local sys = require "zever.sys"

local type, error, tostring, tonumber, format, floor, gsub, byte = type, error, tostring,
  tonumber, string.format, math.floor, string.gsub, string.byte

local M = {}

M.HEADER = "Zever-Signature"
M.JOB = "zever.webhook"

local Hooks = battery.define("webhook", "the webhooks are closed")
M.error = Hooks.error

local CLOSED = Hooks.CLOSED

local function hex(s)
  return (gsub(s, ".", function(c) return format("%02x", byte(c)) end))
end

function M.sign(secret, body, t)
  if type(secret) ~= "string" or secret == "" then
    error("webhook.sign: secret must be a non-empty string", 2)
  end
  if type(body) ~= "string" then error("webhook.sign: body must be a string", 2) end
  t = t or floor(sys.wall())
  return format("t=%d,v1=%s", t, hex(crypto.hmac("sha256", secret, t .. "." .. body)))
end

local INVALID = Hooks.error("invalid", "the signature does not match the body")
local MALFORMED = Hooks.error("invalid", "the signature header is not t=<seconds>,v1=<hex>")
local EXPIRED = Hooks.error("expired", "the signature's timestamp is outside the replay window")

function M.verify(secrets, body, header, opts)
  if type(secrets) == "string" then secrets = { secrets } end
  if type(secrets) ~= "table" or #secrets == 0 then
    error("webhook.verify: secrets must be a string or a list of strings", 2)
  end
  if type(body) ~= "string" then error("webhook.verify: body must be a string", 2) end
  if type(header) ~= "string" then return nil, MALFORMED end
  opts = opts or {}
  local t, sigs = nil, {}
  for part in (header .. ","):gmatch("([^,]*),") do
    local k, v = part:match("^%s*(%w+)=(%S+)%s*$")
    if k == "t" then t = tonumber(v:match("^%d+$") or "") end
    if k == "v1" and v:match("^%x+$") and #v == 64 then sigs[#sigs + 1] = v:lower() end
  end
  if not t or #sigs == 0 then return nil, MALFORMED end
  local now = opts.now or sys.wall()
  local tolerance = opts.tolerance or 300
  if tolerance > 0 and (now - t > tolerance or t - now > tolerance) then return nil, EXPIRED end
  local signed = t .. "." .. body
  for i = 1, #secrets do
    local want = hex(crypto.hmac("sha256", secrets[i], signed))
    for j = 1, #sigs do
      if crypto.equal(want, sigs[j]) then return true end
    end
  end
  return nil, INVALID
end

-- --- the battery ------------------------------------------------------------------------------

local function valid_url(url)
  return type(url) == "string" and url:match("^https?://[^%s/]+") ~= nil
end

function Hooks:register(event, url, secret)
  battery.string(event, "webhook:register", "event")
  battery.string(url, "webhook:register", "url")
  battery.string(secret, "webhook:register", "secret")
  if self.closed then return nil, CLOSED end
  if event == "" then return nil, Hooks.error("invalid", "the event is empty") end
  if not valid_url(url) then return nil, Hooks.error("invalid", "the url is not http(s)://...") end
  if #secret < 16 then return nil, Hooks.error("invalid", "the secret is shorter than 16 bytes") end
  return self.impl:add(event, url, secret)
end

function Hooks:unregister(id)
  if self.closed then return nil, CLOSED end
  return self.impl:remove(id)
end

function Hooks:endpoints(event)
  if self.closed then return nil, CLOSED end
  local list, err = self.impl:list(event)
  if not list then return nil, err end
  local out = {}
  for i, e in ipairs(list) do out[i] = { id = e.id, event = e.event, url = e.url } end
  return out
end

function Hooks:deliver(event, payload)
  battery.string(event, "webhook:deliver", "event")
  if self.closed then return nil, CLOSED end
  if not self.jobs then error("webhook:deliver: the webhooks have no jobs battery (opts.jobs)", 2) end
  local ok, body = pcall(json.encode, payload)
  if not ok then return nil, Hooks.error("invalid", "the payload is not a JSON value") end
  local list, err = self.impl:list(event)
  if not list then return nil, err end
  local n = 0
  for _, e in ipairs(list) do
    self.seq = self.seq + 1
    local id = format("%s%d", self.prefix, self.seq)
    local jid, jerr = self.jobs:dispatch(M.JOB, { endpoint = e.id, event = event, body = body,
      delivery = id })
    if not jid then return nil, jerr end
    n = n + 1
  end
  self.counters.dispatched = self.counters.dispatched + n
  return n
end

-- The job: one delivery attempt. Raises on failure, so the jobs battery retries it.
local function attempt(self, args)
  local e, gerr = self.impl:get(args.endpoint)
  -- A store that cannot answer (the db adapter's database) fails the attempt: it is retried.
  if not e and gerr then error("webhook: the endpoint store: " .. tostring(gerr), 0) end
  if not e then return "unregistered" end
  local headers = {
    ["Content-Type"] = "application/json",
    [M.HEADER] = M.sign(e.secret, args.body),
    ["Zever-Event"] = args.event,
    ["Zever-Delivery"] = args.delivery,
  }
  local status, err = self.send(e.url, headers, args.body)
  -- The endpoint as errors show it: scheme://host:port, without the URL's credentials.
  local origin = (e.url:match("^%a+://[^/?#]+"):gsub("//[^@/]*@", "//"))
  if not status then
    self.counters.failed = self.counters.failed + 1
    error("webhook: " .. origin .. ": " .. tostring(err), 0)
  end
  if status < 200 or status > 299 then
    self.counters.failed = self.counters.failed + 1
    error("webhook: " .. origin .. " answered " .. status, 0)
  end
  self.counters.delivered = self.counters.delivered + 1
  return status
end

-- The default send: a POST through zever.httpc (on the worker's loop: the job yields while
-- it waits), 10 s in all, no redirects (a webhook endpoint that moves is a failed delivery).
-- Returns the status (the job judges it) or nil, err (a zever "http" error: its message names
-- the host and path, never the URL's credentials or query).
local function http_send(url, headers, body)
  local res, err = require("zever.httpc").request{ method = "POST", url = url,
    headers = headers, body = body, timeout = 10, max_redirects = 0, max_body = 65536 }
  if not res then return nil, err end
  return res.status
end
M.http_send = http_send

-- opts: jobs (a zever.jobs: the job is registered on it), send (fn(url, headers, body) ->
-- status | nil, err), attempts (8), backoff ({ base = 30, cap = 3600, jitter = true }).
function M.wrap(impl, opts)
  opts = opts or {}
  if opts.send ~= nil and type(opts.send) ~= "function" then
    error("webhook.wrap: send must be a function", 2)
  end
  local hooks = battery.object(Hooks, impl, {
    jobs = opts.jobs, send = opts.send or http_send, seq = 0,
    prefix = format("%d-%d-", floor(sys.wall() * 1000), sys.getpid()),
    counters = { dispatched = 0, delivered = 0, failed = 0 },
  })
  if opts.jobs then
    opts.jobs:register(M.JOB, function(args) return attempt(hooks, args) end,
      { attempts = opts.attempts or 8, backoff = opts.backoff or { base = 30, cap = 3600,
        jitter = true } })
  end
  return hooks
end

-- The registry's factory: the container's jobs battery, the section's attempts and backoff.
function M.wrap_config(impl, section, ctx)
  local jobs, err = ctx:get("jobs")
  if not jobs then return nil, err end
  return M.wrap(impl, { jobs = jobs, attempts = section.attempts,
    backoff = { base = section.base, cap = section.cap, jitter = true } })
end

function M.new(opts)
  return battery.default(M.wrap, "adapters.webhook.memory", "webhook.new", opts)
end

return M
