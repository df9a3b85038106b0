-- zever.template: etlua-style HTML templates, compiled once to Lua functions and cached.
--
--   <%= expr %>    the value, HTML-escaped (& < > " ' become entities); nil writes nothing
--   <%- expr %>    the value as it is (raw HTML: a partial, a layout's content)
--   <% code %>     Lua code: <% for _, u in ipairs(users) do %> ... <% end %>
--   -%>            (any tag) also drops the newline right after the tag
--
--   local template = require "zever.template"
--   local fn, err = template.compile(source, "views/index.etlua")   -- err names file:line
--   local html = fn(env)              -- env: the names the template sees (a table)
--   template.escape(v)                -> the HTML-escaped text of v
--
--   local views = template.views{ dir = "views", helpers = { ... }, layout = "layout" }
--   views:render(name, data[, { layout = name | false }])  -> html   (views/<name>.etlua)
--   views:helper(name, fn)            a function every template of the set can call
--   views:clear()                     forgets the compiled templates (they reload on next use)
--
-- Inside a template of a view set a name resolves to data's field, else a helper, else a Lua
-- global (ipairs, string, ...). Helpers always there: escape(v), and render(name[, data]),
-- which renders another template of the set (a partial) and returns its HTML: write it with
-- <%- render("users/row", { user = u }) %>. A layout is a template that writes the view's HTML
-- with <%- content %> and sees the view's data too. The app's set is app.views (see zever.app:
-- its folder is http.views, "views" next to app.lua, and url_for is one of its helpers); a
-- handler answers with res:render(name, data[, opts]).
--
-- How it runs: the template becomes the source of one Lua function whose lines are the
-- template's lines (text is written with %q, which keeps its newlines), so a syntax error or
-- a runtime error names the template's file and line. The function appends to a local buffer
-- and concatenates it once (etlua's approach); the names it uses as globals are its locals,
-- read from env once per render (see HEAD below: no closure per render). Compiling is LPeg
-- (the tag grammar below), done once per file per view set; rendering is plain Lua that
-- LuaJIT compiles, and escaping is C (host/html/, through the FFI). It must not read a file
-- more than once per set (until clear) nor build an error's text from data values.

local lpeg = require "lpeg"
local tnew = require "table.new"
local errors = require "zever.errors"

local type, tostring, tonumber, setmetatable, setfenv, loadstring, pairs, rawget, error =
  type, tostring, tonumber, setmetatable, setfenv, loadstring, pairs, rawget, error
local concat, format, find, gsub = table.concat, string.format, string.find, string.gsub
local open = io.open
-- In a bundle (zever bundle) the app's templates are read from its payload (zever.assets).
if require("zever.bundle").active then open = require("zever.assets").open end

local M = {}

-- --- escaping ---------------------------------------------------------------------------------

-- The C escaper (host/html/) through the FFI: the scan that finds nothing to escape costs a
-- call, and the escaped copy is written into one buffer this module keeps (grown as needed).
local ffi = require "ffi"
require "zever.cdef.html"
local native, ffi_string = ffi.C, ffi.string
local buf, cap = nil, 0

-- The text of small non-negative integers (ids, counts), made once each: tostring formats a
-- number through "%.14g" (lj_strfmt_wfnum), ~240 instructions for a 2-digit id (callgrind,
-- bench/tfb /fortunes).
local MAX_INT_TEXT = 4095
local int_text = tnew(MAX_INT_TEXT, 1)

-- The escaped text of v: nil is "", a number is its text (it has nothing to escape).
local function escape(v)
  if type(v) ~= "string" then
    if v == nil then return "" end
    if type(v) == "number" then
      if v <= MAX_INT_TEXT and v % 1 == 0 and (v > 0 or (v == 0 and 1 / v > 0)) then
        local s = int_text[v]
        if s == nil then
          s = tostring(v)
          int_text[v] = s
        end
        return s
      end
      return tostring(v)
    end
    v = tostring(v)
  end
  local len = #v
  local n = tonumber(native.zv_html_escaped_len(v, len))
  if n == len then return v end
  if n > cap then
    cap = n > 2 * cap and n or 2 * cap
    buf = ffi.new("char[?]", cap)
  end
  native.zv_html_escape(v, len, buf)
  return ffi_string(buf, n)
end
M.escape = escape

local function raw(v)
  if type(v) == "string" then return v end
  if v == nil then return "" end
  return tostring(v)
end

-- The fast form (see to_lua) writes into a string.buffer: an escaped value is written straight
-- into the buffer's free space (reserve/commit), with no intermediate string, and the page is
-- the buffer's one copy at the end. Buffers come from a small pool (a render may hold one while
-- a partial renders, or across a yield) and go back after the render; a render that raises
-- drops its buffer to the collector.
local has_sbuf, sbuf = pcall(require, "string.buffer")
local MAX_POOL, MAX_POOLED_BYTES = 16, 1024 * 1024
local pool, npool = {}, 0

local function take()
  if npool == 0 then return sbuf.new() end
  local b = pool[npool]
  pool[npool] = nil
  npool = npool - 1
  return b
end

local function give(b)
  if npool < MAX_POOL and #b <= MAX_POOLED_BYTES then
    b:reset()
    npool = npool + 1
    pool[npool] = b
  end
end

local function put_escaped(b, v)
  if type(v) ~= "string" then
    b:put(escape(v))
    return
  end
  local len = #v
  local n = tonumber(native.zv_html_escaped_len(v, len))
  if n == len then
    b:put(v)
    return
  end
  native.zv_html_escape(v, len, (b:reserve(n)))
  b:commit(n)
end

local function put_raw(b, v)
  if type(v) ~= "string" then v = raw(v) end
  b:put(v)
end

-- --- the grammar -------------------------------------------------------------------------------
-- A template is text and tags. A chunk: { kind, text, position } with kind "text", "=", "-" or
-- "code"; trim is true when the tag closed with -%>.

local P, C, Cc, Cp, Ct, S = lpeg.P, lpeg.C, lpeg.Cc, lpeg.Cp, lpeg.Ct, lpeg.S
local OPEN = P "<%"
local CLOSE = P "-%>" * Cc(true) + P "%>" * Cc(false)
local BODY = C((1 - (P "-%>" + P "%>"))^0)
local TAG = Ct(Cp() * OPEN * (C(S "=-") + Cc "code") * BODY * CLOSE)
local TEXT = Ct(Cp() * Cc "text" * C((1 - OPEN)^1))
local TEMPLATE = Ct((TEXT + TAG)^0) * Cp()

local function line_of(source, pos)
  local _, n = gsub(source:sub(1, pos - 1), "\n", "")
  return n + 1
end

local function fail(name, line, message)
  return nil, errors.new("template", "invalid", format("%s:%d: %s", name, line, message),
    { file = name, line = line })
end

-- The Lua source of a template. Everything before the template's first line sits on line 1, so
-- the source's line numbers are the template's; TAIL sits on the line after the last.
-- The buffer starts at the size the template's largest render so far needed (_size), so a
-- warm render does not grow it piece by piece.
--
-- Two forms. The fast one (HEAD .. names .. START) is a function(_env) made once per compile:
-- every name the template reads or assigns as a global becomes a local of the render, read from
-- _env once at its start (`local users, title = _env.users, _env.title`), so a render creates no
-- closure (LuaJIT does not compile FNEW: a closure per render kept fortunes in the interpreter)
-- and its loops are plain loops over locals. The names come from the bytecode of the second
-- form, SLOW_HEAD (GGET/GSET operands, nested functions included), which runs the template's
-- code under setfenv(function ... end, env) and is kept when the fast form cannot be made (more
-- names than a function may have locals, or no jit.util).
local FAST = {
  head = "local _esc, _raw, _take, _give = ... return function(_env) ",
  start = "local _b = _take() ",
  tail = "\n local _s = _b:tostring() _give(_b) return _s end",
  text = " _b:put(%q)", expr = " %s(_b, %s)",
}
local SLOW = {
  head = "local _esc, _raw, _concat, _tnew, _setfenv = ... local _size = 8 " ..
    "return function(_env) return _setfenv(function() local _b, _n = _tnew(_size, 0), 0 ",
  tail = "\n if _n > _size then _size = _n end return _concat(_b, '', 1, _n) end, _env)() end",
  text = " _n = _n + 1 _b[_n] = %q", expr = " _n = _n + 1 _b[_n] = %s(%s)",
}

-- The names a compiled chunk (and the functions inside it) reads or writes as globals, in the
-- order first met; nil without jit.util.
local global_names
do
  local ok, util = pcall(require, "jit.util")
  local bit = require "bit"
  local band, rshift = bit.band, bit.rshift
  if ok then
    -- The opcodes of GGET and GSET, from two probes (no jit.vmdef needed): "return x" starts
    -- with GGET, "x = nil" is KPRI then GSET.
    local GGET = band(util.funcbc(loadstring("return _zv_probe"), 0 + 1), 0xff)
    local GSET = band(util.funcbc(loadstring("_zv_probe = nil"), 2), 0xff)
    local function walk(fn, names, seen)
      local pc = 1
      while true do
        local ins = util.funcbc(fn, pc)
        if ins == nil then break end
        local op = band(ins, 0xff)
        if op == GGET or op == GSET then
          local name = util.funck(fn, -rshift(ins, 16) - 1)
          if not seen[name] then
            seen[name] = true
            names[#names + 1] = name
          end
        end
        pc = pc + 1
      end
      -- A nested function is a "proto" among the constants (as jit/bc.lua walks them).
      if util.funcinfo(fn).children then
        for i = 1, util.funcinfo(fn).gcconsts do
          local k = util.funck(fn, -i)
          if type(k) == "proto" then walk(k, names, seen) end
        end
      end
      return names
    end
    global_names = function(chunk) return walk(chunk, {}, {}) end
  end
end

local function to_lua(source, name, form, head)
  local chunks, stop = TEMPLATE:match(source)
  if stop <= #source then
    -- The only thing the grammar cannot read is a tag that never closes.
    return fail(name, line_of(source, stop), "unclosed tag (want %> after <%)")
  end
  local out, n, trim = { head or form.head }, 1, false
  for i = 1, #chunks do
    local c = chunks[i]
    local pos, kind, text = c[1], c[2], c[3]
    if kind == "text" then
      if trim then text = text:gsub("^\n", "", 1) end
      trim = false
      if text ~= "" then
        n = n + 1
        out[n] = format(form.text, text)
      end
    else
      trim = c[4]
      if kind == "code" then
        n = n + 1
        out[n] = " " .. text .. " "
      else
        if find(text, "^%s*$") then
          return fail(name, line_of(source, pos), "empty <%" .. kind .. " %> tag")
        end
        n = n + 1
        -- An expression with several values writes its first (the call takes one argument).
        out[n] = format(form.expr, kind == "=" and "_esc" or "_raw", text)
      end
    end
  end
  out[n + 1] = form.tail
  return concat(out)
end

-- Compiles source (named name in errors: a file path) to a function(env) -> html. Returns
-- nil, err (a zever.errors error, code "invalid", message "file:line: what") on a bad tag or
-- Lua that does not compile.
function M.compile(source, name)
  if type(source) ~= "string" then error("template.compile: source must be a string", 2) end
  name = name or "template"
  local lua, err = to_lua(source, name, SLOW)
  if not lua then return nil, err end
  local chunk, msg = loadstring(lua, "=" .. name)
  if not chunk then
    -- "name:LINE: message" already; the LINE is the template's (see to_lua).
    local line, text = msg:sub(#name + 2):match("^(%d+): (.*)$")
    line = tonumber(line)
    if line then
      local last = line_of(source, #source + 1)
      -- An error on the line after the template is in TAIL: a block left open.
      if line > last then
        return fail(name, last, "a Lua block is not closed (a <% if/for/while/function %> " ..
          "without its <% end %>): " .. text)
      end
      return fail(name, line, text)
    end
    return fail(name, 1, msg)
  end
  if global_names and has_sbuf then
    local names, head = global_names(chunk), FAST.head
    if #names > 0 then
      local reads = {}
      for i = 1, #names do reads[i] = "_env." .. names[i] end
      head = head .. "local " .. concat(names, ", ") .. " = " .. concat(reads, ", ") .. " "
    end
    local fast = loadstring(to_lua(source, name, FAST, head .. FAST.start), "=" .. name)
    if fast then return fast(put_escaped, put_raw, take, give) end
  end
  return chunk(escape, raw, concat, tnew, setfenv)
end

-- --- view sets ---------------------------------------------------------------------------------

local Views = {}
Views.__index = Views

-- The environment of one render: data's names, then the set's helpers, then Lua's globals.
local function env_of(views, data)
  return setmetatable({ [1] = data }, views.env_mt)
end

local function load(views, name)
  local fn = views.cache[name]
  if fn then return fn end
  if type(name) ~= "string" or name == "" or find(name, "%.%.") or find(name, "%z") then
    error(format("views: bad template name %q", tostring(name)), 3)
  end
  local path = views.dir .. "/" .. name .. views.ext
  local f = open(path, "rb")
  if not f then error(format("views: no template %s (looked for %s)", name, path), 3) end
  local source = f:read("*a")
  f:close()
  local err
  fn, err = M.compile(source, path)
  if not fn then error(err, 3) end
  views.cache[name] = fn
  return fn
end

local function render(views, name, data, opts)
  if data ~= nil and type(data) ~= "table" then error("views:render: data must be a table", 3) end
  data = data or {}
  local html = load(views, name)(env_of(views, data))
  local layout = views.layout
  if opts ~= nil then
    if type(opts) ~= "table" then error("views:render: opts must be a table", 3) end
    if opts.layout ~= nil then layout = opts.layout end
  end
  if not layout then return html end
  local env = env_of(views, data)
  env.content = html
  return load(views, layout)(env)
end

-- Renders the template name (dir/name.ext) with data; with the set's layout (or opts.layout;
-- false for none) around it. Raises on a missing template or one that does not compile (the
-- message names file:line), and on an error inside the template (its file:line too).
function Views:render(name, data, opts)
  return render(self, name, data, opts)
end

function Views:helper(name, fn)
  if type(name) ~= "string" or type(fn) ~= "function" then
    error("views:helper: want a name and a function", 2)
  end
  self.helpers[name] = fn
  return self
end

function Views:clear()
  self.cache = {}
  return self
end

-- opts: dir (default "views"), ext (default ".etlua"), helpers (a table of functions),
-- layout (a template name used around every render; default none).
function M.views(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("template.views: opts must be a table", 2) end
  local views = setmetatable({ dir = opts.dir or "views", ext = opts.ext or ".etlua",
    layout = opts.layout, cache = {}, helpers = {} }, Views)
  local helpers = views.helpers
  for k, v in pairs(opts.helpers or {}) do helpers[k] = v end
  helpers.escape = escape
  helpers.render = function(name, data) return render(views, name, data, { layout = false }) end
  local G = _G
  views.env_mt = { __index = function(env, key)
    local v = rawget(env, 1)[key]
    if v == nil then
      v = helpers[key]
      if v == nil then v = G[key] end
    end
    return v
  end }
  return views
end

return M
