-- adapters.mailer.log: the zero-infrastructure mailer. Each send renders the message with the
-- MIME builder (so it validates exactly as SMTP will) and appends one JSON line describing it
-- to mailer.log_file, or to stderr when that is empty:
--
--   {"time":"2026-11-29T22:54:38Z","message_id":"<...@x.io>","from":"z@x.io","to":["a@b.c"],
--    "cc":[],"bcc":[],"subject":"Hi","headers":"From: ...\r\n...","size":1234,"text_bytes":5,
--    "html_bytes":0,"attachments":[{"filename":"a.pdf","content_type":"application/pdf",
--    "bytes":30123}]}
--
-- Rendering and the JSON line happen in C (zever.mime_core's sink) in buffers kept between
-- sends, written with one write(2) on an O_APPEND descriptor: after warm-up a send allocates
-- nothing in C, and lines of several workers do not interleave. It must not deliver anything.
--
--   log.open(section, ctx) = log.new(section) -> adapter | nil, err   (the adapter contract)
--   adapter:send(msg, default_from, max_bytes) -> message_id | nil, err (a zever error)

local core = require "zever.mime_core"
local errors = require "zever.errors"
local ffi = require "ffi"

local setmetatable, type, rawget = setmetatable, type, rawget
local ffi_string, ffi_new, ffi_cast = ffi.string, ffi.new, ffi.cast

require "zever.cdef.mime"
require "zever.cdef.libc" -- strerror

local C = ffi.C
local sink_ptr = ffi.typeof("zv_mime_sink_t *")
local MAX_ADDRS = 32 -- POOL_ADDRS of l_mime_core.c

local M = {}

local Log = {}
Log.__index = Log

-- new(section) -> adapter | nil, err; section.log_file ("" = stderr).
function M.new(section)
  local path = section and section.log_file
  if path == "" then path = nil end
  local sink, message, kind = core.sink(path)
  if not sink then return nil, errors.binding("mailer", kind, message) end
  -- The flat layout zv_mime_sink_send_flat reads, reused by every send of this adapter.
  return setmetatable({ sink = sink, path = path, ptr = ffi_cast(sink_ptr, sink:ptr()),
    addrs = ffi_new("zv_mime_flat_addr_t[?]", MAX_ADDRS), counts = ffi_new("int[5]"),
    fields = ffi_new("zv_mime_str_t[5]"), id = ffi_new("zv_mime_str_t[1]") }, Log)
end

-- Lays out one address (a string, or { name =, email = } of strings) at slot k; returns the
-- next slot, or nil for anything else (the classic path then decides).
local function put_addr(addrs, k, v)
  if k >= MAX_ADDRS then return nil end
  local a = addrs[k]
  if type(v) == "string" then
    a.email.s, a.email.len, a.name.s, a.name.len, a.parse = v, #v, nil, 0, 1
    return k + 1
  end
  local email, name = v.email, v.name
  if type(email) ~= "string" then return nil end
  a.email.s, a.email.len, a.parse = email, #email, 0
  if name == nil then
    a.name.s, a.name.len = nil, 0
  elseif type(name) == "string" then
    a.name.s, a.name.len = name, #name
  else
    return nil
  end
  return k + 1
end

-- Lays out an address field (nil, an address or, but for From, a list of them) from slot k;
-- sets counts[l]; returns the next slot or nil.
local function put_list(addrs, counts, l, v, k)
  if v == nil then
    counts[l] = 0
    return k
  end
  local t = type(v)
  if t == "string" then
    counts[l] = 1
    return put_addr(addrs, k, v)
  end
  if t ~= "table" then return nil end
  if v.email ~= nil then
    counts[l] = 1
    return put_addr(addrs, k, v)
  end
  if l == 0 then return nil end
  local n = #v
  for i = 1, n do
    local e = rawget(v, i)
    if type(e) ~= "string" and (type(e) ~= "table" or e.email == nil) then return nil end
    k = put_addr(addrs, k, e)
    if not k then return nil end
  end
  counts[l] = n
  return k
end

local function put_str(f, v)
  if v == nil then
    f.s, f.len = nil, 0
    return true
  end
  if type(v) ~= "string" then return false end
  f.s, f.len = v, #v
  return true
end

-- The common message (addresses as strings or { name =, email = }, string fields, no custom
-- headers or attachments) goes to C through the FFI, which the JIT compiles; anything else,
-- and every refusal (to get its kind and message), through the classic binding with the fields
-- as arguments. The message table keeps the strings the spans point into alive for the call.
function Log:send(msg, default_from, max_bytes)
  local from, to, cc, bcc, reply_to = msg.from, msg.to, msg.cc, msg.bcc, msg.reply_to
  local subject, text, html, date, message_id = msg.subject, msg.text, msg.html, msg.date,
    msg.message_id
  local headers, attachments = msg.headers, msg.attachments
  if headers == nil and attachments == nil and (max_bytes == nil or type(max_bytes) == "number") then
    local addrs, counts, fields = self.addrs, self.counts, self.fields
    local k = put_list(addrs, counts, 0, from == nil and default_from or from, 0)
    k = k and put_list(addrs, counts, 1, to, k)
    k = k and put_list(addrs, counts, 2, cc, k)
    k = k and put_list(addrs, counts, 3, bcc, k)
    k = k and put_list(addrs, counts, 4, reply_to, k)
    if k and put_str(fields[0], subject) and put_str(fields[1], text) and put_str(fields[2], html)
        and put_str(fields[3], date) and put_str(fields[4], message_id) then
      local id = self.id
      local rc = C.zv_mime_sink_send_flat(self.ptr, addrs, counts, fields, max_bytes or 0, id)
      if rc == 0 then return ffi_string(id[0].s, id[0].len) end
      if rc > 0 then
        return nil, errors.binding("mailer", "unavailable",
          "cannot write the mail log: " .. ffi_string(C.strerror(rc)))
      end
    end
  end
  local id, message, kind = self.sink:send_fields(from, to, cc, bcc, reply_to, subject, text,
    html, date, message_id, headers, attachments, default_from, max_bytes)
  if id then return id end
  return nil, errors.binding("mailer", kind, message)
end

function Log:close()
  self.sink:close()
end

M.open = M.new

return M
