-- zever.request.body: the request methods that read the body beyond req.body: req:form(),
-- req:files(), req:read(n) and req:body_reader(n) (docs/forms.md, docs/streaming.md). zever.request
-- installs them on its first request that calls one, so an app that never reads a form or a
-- streamed body does not hold this code (docs/app.md, "Start-up heap").
--
-- It must not require zever.request (the require graph has no cycles): zever.request hands it
-- what they share, through M.install.

local errors = require "zever.errors"
-- zever.multipart (whose LPeg grammar costs ~0.9 M instructions to build) loads on the first
-- request that parses a multipart form, not with req:read.
local multipart = setmetatable({}, { __index = function(t, k)
  local m = require "zever.multipart"
  setmetatable(t, { __index = m })
  return m[k]
end })

local setmetatable, rawget, rawset = setmetatable, rawget, rawset
local format, gsub, sub = string.format, string.gsub, string.sub
local type, select, ipairs, pairs, tostring = type, select, ipairs, pairs, tostring

local M = {}

-- Whether req's body is still coming from the socket (a stream_body route dispatched at the end
-- of its head, zever.stream): a form reads it piece by piece, a multipart body's files are
-- spooled as they arrive, never held whole, and req.body raises. zever.middleware.csrf asks
-- it too, before it looks for its field in a form.
function M.streamed(req)
  local src = req.source
  local f = type(src) == "userdata" and src.streamed
  return f and f(src) or false
end

-- Installs the methods into Request (zever.request's metatable); R is zever.request's module
-- (R.form_limits, R.parse_query), put its query-string rule for one key ("k[]" collects).
function M.install(Request, R, put)
  local STATUS = { too_large = 413, invalid = 400, unsupported = 415, unavailable = 500 }

  local function form_error(code, message)
    return errors.new("form", code, message, { status = STATUS[code] or 400 })
  end

  local File = {}
  File.__index = File

  -- The file's bytes (from memory or from its temporary file).
  function File:read()
    if self.data then return self.data end
    local f, err = io.open(self.path, "rb")
    if not f then
      return nil, form_error("unavailable", "cannot read an upload: " .. tostring(err))
    end
    local s = f:read("*a")
    f:close()
    return s
  end

  -- A client's file name without any folder part ("C:\a\b.txt" -> "b.txt"): never a path.
  local function base_name(name)
    return (name:match("([^/\\]*)$"))
  end

  local LIMIT_KEYS = { max_parts = true, max_field_bytes = true, max_file_bytes = true,
    spool_bytes = true, tmpdir = true }

  local is_streamed = M.streamed

  local READ_PIECE = 256 * 1024

  local function body_kind(err)
    return err.status == 413 and "too_large" or "invalid"
  end

  local function read_all(req)
    local parts = {}
    while true do
      local chunk, err = req:read(READ_PIECE)
      if chunk == nil then
        if err then return nil, err end
        return table.concat(parts)
      end
      parts[#parts + 1] = chunk
    end
  end

  local function stream_multipart(req, ctype, limits)
    local p, msg, kind = multipart.new(ctype, limits)
    if not p then return nil, msg, kind end
    -- The parser's live list of temporary files: removed after the response (zever.app), even
    -- when the upload breaks off midway.
    rawset(req, "_tempfiles", p:spooled())
    while true do
      local chunk, err = req:read(READ_PIECE)
      if chunk == nil then
        if err then return nil, err.message, body_kind(err) end
        return p:finish()
      end
      local ok
      ok, msg, kind = p:feed(chunk)
      if not ok then return nil, msg, kind end
    end
  end

  local function parse_form(req, opts)
    local ctype = req.source:header("content-type") or ""
    local mtype = ctype:match("^%s*([^;%s]*)"):lower()
    local limits = R.form_limits
    if opts then
      local merged = {}
      for k, v in pairs(limits) do merged[k] = v end
      for k, v in pairs(opts) do merged[k] = v end
      limits = merged
    end
    local streamed = is_streamed(req)
    local body = not streamed and req.body
    if mtype == "application/x-www-form-urlencoded" then
      if streamed then
        local err
        body, err = read_all(req)
        if not body then return nil, form_error(body_kind(err), err.message) end
      end
      local n = select(2, gsub(body, "[&;]", "")) + 1
      if n > limits.max_parts then
        return nil, form_error("too_large", format("more than %d fields", limits.max_parts))
      end
      return R.parse_query(body), {}
    elseif mtype == "multipart/form-data" then
      local parts, msg, kind
      if streamed then
        parts, msg, kind = stream_multipart(req, ctype, limits)
      else
        parts, msg, kind = multipart.parse(body, ctype, limits)
      end
      if not parts then return nil, form_error(kind, msg) end
      local fields, files = {}, {}
      for _, p in ipairs(parts) do
        if p.filename then
          if p.path and not streamed then
            local list = rawget(req, "_tempfiles") or {}
            list[#list + 1] = p.path
            rawset(req, "_tempfiles", list)
          end
          -- An empty file input sends a part with filename="" and no bytes: not a file.
          if p.filename ~= "" or p.size > 0 then
            p.filename = base_name(p.filename)
            files[#files + 1] = setmetatable(p, File)
          end
        else
          put(fields, p.name, p.data)
        end
      end
      return fields, files
    elseif body == "" or streamed and req:read(1) == nil then
      return {}, {}
    end
    return nil, form_error("unsupported", "the body is " .. (mtype ~= "" and mtype or "untyped")
      .. ", not a form")
  end

  -- The form's fields: { name = value } (a "name[]" field is a list). nil, err when the body is
  -- malformed or over a limit: err.status is the status to answer (400, 413, 415). opts
  -- overrides zever.request.form_limits for this request (the first call parses; later calls
  -- reuse it).
  function Request:form(opts)
    if opts ~= nil and type(opts) ~= "table" then error("req:form(opts) wants a table", 2) end
    if opts then
      for k in pairs(opts) do
        if not LIMIT_KEYS[k] then error("req:form: unknown option '" .. tostring(k) .. "'", 2) end
      end
    end
    local form = rawget(self, "_form")
    if form == nil then
      local files
      form, files = parse_form(self, opts)
      if form == nil then
        rawset(self, "_form", false)
        rawset(self, "_form_err", files)
        return nil, files
      end
      rawset(self, "_form", form)
      rawset(self, "_files", files)
    elseif form == false then
      return nil, rawget(self, "_form_err")
    end
    return form
  end

  -- The uploaded files, in body order (an empty list for a form without files).
  function Request:files()
    local form, err = self:form()
    if form == nil then return nil, err end
    return rawget(self, "_files")
  end

  -- --- reading the body piece by piece (docs/streaming.md, "Request bodies") --------------------

  -- The next piece of the body, at most n bytes (default 64 KiB): a string; nil at the end;
  -- nil, err when the client went away or the body broke a limit (err.code "closed",
  -- "too_large", "timeout", "invalid"; err.status 400, 413, 408). On a stream_body route it
  -- waits (yields) for bytes from the socket; the server reads on only as the handler takes
  -- them. Elsewhere it reads the body already received.
  function Request:read(n)
    if n ~= nil and (type(n) ~= "number" or n < 1) then
      error("req:read(n) wants a number >= 1", 2)
    end
    local src = self.source
    if type(src) == "userdata" then
      local state = rawget(self, "_body_state")
      if not state then
        state = { read = 0, limit = rawget(self, "_max_body") }
        rawset(self, "_body_state", state)
      end
      return require("zever.stream").read_body(src, n or 65536, state)
    end
    -- A table source (zever.testing): its body string.
    local body, pos = self.body, rawget(self, "_body_pos") or 0
    if pos >= #body then return nil end
    local chunk = sub(body, pos + 1, pos + (n or 65536))
    rawset(self, "_body_pos", pos + #chunk)
    return chunk
  end

  -- A function that returns the next piece of the body each call (req:read(n)): for chunk in
  -- req:body_reader() do ... end stops at the end, or at a failure, which the reader then
  -- remembers: reader.err (nil after a clean end).
  function Request:body_reader(n)
    if n ~= nil and (type(n) ~= "number" or n < 1) then
      error("req:body_reader(n) wants a number >= 1", 2)
    end
    local reader = {}
    return setmetatable(reader, { __call = function()
      local chunk, err = self:read(n)
      if err then reader.err = err end
      return chunk, err
    end })
  end
end

return M
