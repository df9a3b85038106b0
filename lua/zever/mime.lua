-- zever.mime: renders a mail message (RFC 5322 + MIME) from the table app.mailer:send takes.
--
--   local bytes, envelope = mime.build(msg[, { from = default_from, max_bytes = n }])
--   -- bytes:    the message, CRLF line breaks, ready for SMTP DATA (before dot-stuffing)
--   -- envelope: { from = "z@x.io", to = { every To, Cc and Bcc address once } }
--   -- or nil, err (err.code == "invalid", err.message names the field: "to[2] is not a valid
--   --            email address", "subject contains CR or LF (header injection)", ...)
--   mime.parse_address("Zoë <z@x.io>") -> "z@x.io", "Zoë"  | nil, message, "invalid"
--   mime.check_address("z@x.io")       -> boolean
--   mime.MAX_BYTES                      the default size cap (10 MiB)
--
-- msg = { from, to, cc, bcc, reply_to, subject, text, html, headers, attachments,
--         date, message_id }; addresses are "a@b.c", "Name <a@b.c>" or { name =, email = },
-- lists allowed (from: exactly one). headers: { ["X-Name"] = "v" } (written sorted by name) or
-- { {"X-Name", "v"}, ... } (in order). attachments: { { filename =, content_type =, data = } }
-- or positional { filename, content_type, data }. date and message_id pin those headers (for
-- golden tests); otherwise Date is now and Message-ID is generated. Bcc is in the envelope,
-- never in the headers. The work is done in C (host/mime/); this module only maps results.
-- A wrong type raises (the caller is blamed); a refused message returns nil, err.

local core = require "zever.mime_core"
local errors = require "zever.errors"

local type, error = type, error
local build = core.build

local M = { MAX_BYTES = core.MAX_BYTES, parse_address = core.parse_address,
  check_address = core.check_address }


function M.build(msg, opts)
  if type(msg) ~= "table" then error("mime.build: the message must be a table", 2) end
  local from, max
  if opts ~= nil then
    if type(opts) ~= "table" then error("mime.build: opts must be a table", 2) end
    from, max = opts.from, opts.max_bytes
  end
  local bytes, envelope, kind = build(msg, from, max)
  if bytes then return bytes, envelope end
  -- A failure is nil, message, kind (the binding's order).
  if kind == "misuse" then error("mime.build: " .. envelope, 2) end
  if kind == "nomem" then error("mime.build: out of memory", 2) end
  return nil, errors.binding("mime", "invalid", envelope)
end

return M
