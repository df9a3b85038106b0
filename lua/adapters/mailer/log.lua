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

local core = require "zever.mime_core"

local setmetatable = setmetatable

local M = {}

local Log = {}
Log.__index = Log

-- new(section) -> adapter | nil, err; section.log_file ("" = stderr).
function M.new(section)
  local path = section and section.log_file
  if path == "" then path = nil end
  local sink, kind, message = core.sink(path)
  if not sink then
    return nil, setmetatable({ code = kind, message = "mailer: " .. message },
      { __tostring = function(e) return e.message end })
  end
  return setmetatable({ sink = sink, path = path }, Log)
end

-- The fields go to C as arguments: reading them here is a few JIT-compiled loads, reading
-- them in C takes a lookup through the C API each.
function Log:send(msg, default_from, max_bytes)
  return self.sink:send_fields(msg.from, msg.to, msg.cc, msg.bcc, msg.reply_to, msg.subject,
    msg.text, msg.html, msg.date, msg.message_id, msg.headers, msg.attachments, default_from,
    max_bytes)
end

function Log:close()
  self.sink:close()
end

return M
