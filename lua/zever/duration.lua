-- zever.duration: durations in three formats, read as seconds (a Lua number, the convention for
-- timeouts) or as exact int64 nanoseconds, written in any of the formats.
--
--   duration.parse(s)          -> seconds              | nil, err   (all formats, days allowed)
--   duration.parse_ns(s)       -> int64 nanoseconds    | nil, err
--   duration.format(x[, fmt])  -> string               | nil, err   (x: seconds or int64 ns)
--   duration.codec{ write = "iso8601", accept = {"units", "nano"}, days = true }
--                              -> codec with :decode(s), :decode_ns(s), :encode(x)
--
-- The work is done by the C core (host/duration/). The per-call paths reach it through LuaJIT's
-- FFI, which the JIT compiles into the caller's trace; the classic binding (zever.duration_core)
-- is the fallback when the host does not export the core's symbols, and builds the messages.
-- This module keeps no per-call state beyond preallocated boxes, and must not build an error's
-- text before someone reads it: rejecting an input costs one small table.

local ffi = require "ffi"
local bit = require "bit"
local core = require "zever.duration_core"
local errors = require "zever.errors"

local type, tostring, tonumber, setmetatable, error = type, tostring, tonumber, setmetatable,
  error
local lazy = errors.lazy
local floor = math.floor
local band, bor = bit.band, bit.bor
local istype = ffi.istype

local ISO8601, UNITS, NANO, ALL = core.ISO8601, core.UNITS, core.NANO, core.ALL
local FORMATS = { iso8601 = ISO8601, units = UNITS, nano = NANO }
local CANONICAL = { "iso8601", "units", "nano" }
local NAMES = { [ISO8601] = "iso8601", [UNITS] = "units", [NANO] = "nano" }

-- Cause codes by name (core.causes maps code -> name).
local CAUSE = {}
for code = 0, #core.causes do CAUSE[core.causes[code]] = code end

local int64_t, uint64_t = ffi.typeof("int64_t"), ffi.typeof("uint64_t")
local INT64_MAX = ffi.new("uint64_t", 9223372036854775807ULL)
local EXACT = 2 ^ 53

-- --- backends ----------------------------------------------------------------------------
-- Each backend offers the same four raw calls; everything above them is shared.
--   seconds_of(s, accept, days) -> seconds      | nil, code, format, at, len
--   ns_of(s, accept, days)      -> int64        | nil, code, format, at, len
--   write_ns(ns, fmt, days)     -> string
--   write_seconds(x, fmt, days) -> string       | nil (NaN or out of range)
-- days is 0 or 1.

local function classic_backend()
  local c_parse, c_parse_ns, c_format, c_format_seconds =
    core.parse, core.parse_ns, core.format, core.format_seconds
  local arshift = bit.arshift
  local TWO32 = 4294967296
  return {
    name = "classic",
    seconds_of = function(s, accept, days) return c_parse(s, accept, days == 1) end,
    ns_of = function(s, accept, days)
      local hi, lo, format, at, len = c_parse_ns(s, accept, days == 1)
      if hi == nil then return nil, lo, format, at, len end
      return int64_t(hi) * TWO32 + lo
    end,
    write_ns = function(ns, fmt, days)
      return c_format(tonumber(arshift(ns, 32)), tonumber(band(ns, 0xffffffff)), fmt, days == 1)
    end,
    write_seconds = function(x, fmt, days) return c_format_seconds(x, fmt, days == 1) end,
  }
end

local function ffi_backend()
  require "zever.cdef.duration"
  local C = ffi.C
  -- A host linked without -Wl,-E does not export the core: fall back to the classic API.
  local ok = pcall(function()
    return C.zv_duration_parse and C.zv_duration_format and C.zv_duration_from_seconds
  end)
  if not ok then return nil end
  local parse, format, from_seconds = C.zv_duration_parse, C.zv_duration_format,
    C.zv_duration_from_seconds
  local ns_box, cause_box = ffi.new("int64_t[1]"), ffi.new("zv_duration_cause_t[1]")
  local buf, len_box = ffi.new("char[32]"), ffi.new("size_t[1]")
  local ffi_string = ffi.string
  local function cause()
    local c = cause_box[0]
    return nil, c.code, c.format, c.at, c.len
  end
  return {
    name = "ffi",
    seconds_of = function(s, accept, days)
      if parse(s, #s, accept, days, ns_box, cause_box) == 0 then
        return tonumber(ns_box[0]) / 1e9
      end
      return cause()
    end,
    ns_of = function(s, accept, days)
      if parse(s, #s, accept, days, ns_box, cause_box) == 0 then return ns_box[0] end
      return cause()
    end,
    write_ns = function(ns, fmt, days)
      format(ns, fmt, days, buf, 32, len_box)
      return ffi_string(buf, len_box[0])
    end,
    write_seconds = function(x, fmt, days)
      if from_seconds(x, ns_box) ~= 0 then return nil end
      format(ns_box[0], fmt, days, buf, 32, len_box)
      return ffi_string(buf, len_box[0])
    end,
  }
end

-- --- errors ------------------------------------------------------------------------------
-- A rejection is a zever.errors error of battery "duration", code "invalid", made lazy
-- (errors.lazy): it holds the input, the codec and the packed cause, and KIND's fill computes
-- input, message, cause and reason on first read. codec is false for a value that could not be
-- written (format/encode), whose message says so. tostring shows the message alone (as_is).

local function input_text(x)
  if type(x) == "string" then return x, true end
  if type(x) == "cdata" then return (tostring(x):gsub("U?LL$", "")), false end
  return tostring(x), false
end

-- The cause is packed in one number (exact below 2^53): code (5 bits), format (3 bits), then
-- the span's start and length, 22 bits each (spans of longer inputs are clamped; the text
-- quotes 32 bytes at most anyway).
local SPAN = 4194304 -- 2^22

local function pack(code, format, at, len)
  if at >= SPAN then at = SPAN - 1 end
  if len >= SPAN then len = SPAN - 1 end
  return code + format * 32 + at * 256 + len * 1073741824
end

local function cause_of(err)
  local input, packed = err[1], err[3]
  return core.cause_text(packed % 32, floor(packed / 32) % 8, floor(packed / 256) % SPAN,
    floor(packed / 1073741824), type(input) == "string" and input or nil)
end

local KIND = errors.kind("duration", "invalid", function(err, key)
  if key == "input" then return err[1] end
  if key == "reason" then return core.causes[err[3] % 32]:lower() end
  if key == "cause" then return cause_of(err) end
  if key == "message" then
    local codec, text, quote = err[2], input_text(err[1])
    if codec then return core.message(text, quote, codec._write, codec._accept) end
    return "cannot write duration " .. text .. ": " .. cause_of(err)
  end
  return nil
end, true)

local function reject(codec, input, code, format, at, len)
  return nil, lazy(KIND, input, codec, pack(code, format or 0, at or 0, len or 0))
end

-- --- the API, over one backend ------------------------------------------------------------

local function build(be)
  local seconds_of, ns_of, write_ns, write_seconds = be.seconds_of, be.ns_of, be.write_ns,
    be.write_seconds

  local M = { backend = be.name, formats = CANONICAL }

  local Codec = {}
  Codec.__index = Codec

  -- Reads a number or an int64 as nanoseconds for codec c: returns ns (a Lua number or an
  -- int64), or nil, err. Anything else is a misuse, blamed on the caller of fname's caller.
  local function other_ns(c, x, fname)
    if type(x) == "number" then
      if band(c._accept, NANO) == 0 then return reject(c, x, CAUSE.NOTACCEPTED, NANO) end
      if x ~= floor(x) then return reject(c, x, CAUSE.NOTINTEGER) end
      if x > EXACT or x < -EXACT then return reject(c, x, CAUSE.INEXACT) end
      return x
    end
    if istype(int64_t, x) or istype(uint64_t, x) then
      if band(c._accept, NANO) == 0 then return reject(c, x, CAUSE.NOTACCEPTED, NANO) end
      if istype(uint64_t, x) then
        if x > INT64_MAX then return reject(c, x, CAUSE.OVERFLOW) end
        x = int64_t(x)
      end
      return x
    end
    error("bad argument #1 to '" .. fname .. "' (string or number expected, got " .. type(x) .. ")", 4)
  end

  local function decode(c, s, fname)
    if type(s) == "string" then
      local sec, code, format, at, len = seconds_of(s, c._accept, c._days)
      if sec then return sec end
      return reject(c, s, code, format, at, len)
    end
    local ns, err = other_ns(c, s, fname)
    if ns == nil then return nil, err end
    return tonumber(ns) / 1e9
  end

  local function decode_ns(c, s, fname)
    if type(s) == "string" then
      local ns, code, format, at, len = ns_of(s, c._accept, c._days)
      if ns then return ns end
      return reject(c, s, code, format, at, len)
    end
    local ns, err = other_ns(c, s, fname)
    if ns == nil then return nil, err end
    return int64_t(ns)
  end

  local function encode(x, fmt, days, fname)
    if type(x) == "number" then
      local s = write_seconds(x, fmt, days)
      if s then return s end
      return reject(false, x, CAUSE.OVERFLOW)
    end
    if istype(int64_t, x) then return write_ns(x, fmt, days) end
    if istype(uint64_t, x) then
      if x > INT64_MAX then return reject(false, x, CAUSE.OVERFLOW) end
      return write_ns(int64_t(x), fmt, days)
    end
    error("bad argument #1 to '" .. fname .. "' (number or int64 expected, got " .. type(x) .. ")", 3)
  end

  function Codec:decode(s)
    local sec, err = decode(self, s, "decode")
    return sec, err
  end

  function Codec:decode_ns(s)
    local ns, err = decode_ns(self, s, "decode_ns")
    return ns, err
  end

  function Codec:encode(x)
    local s, err = encode(x, self._write, self._days, "encode")
    return s, err
  end

  function Codec:__tostring()
    return "duration codec (" .. self.write .. "; accepts " .. table.concat(self.accept, ", ")
      .. (self.days and "; days)" or ")")
  end

  -- Codecs by key: write * 16 + accept mask * 2 + days + 1, at most 4 * 16 + 7 * 2 + 2 = 80.
  -- The slots exist from the start so that a lookup reads the array part.
  local codecs = {}
  for i = 1, 80 do codecs[i] = false end

  local function new_codec(write, accept, days)
    local names = { NAMES[write] }
    for _, name in ipairs(CANONICAL) do
      local f = FORMATS[name]
      if f ~= write and band(accept, f) ~= 0 then names[#names + 1] = name end
    end
    local c = setmetatable({
      write = NAMES[write], accept = names, days = days == 1,
      _write = write, _accept = accept, _days = days,
    }, Codec)
    codecs[write * 16 + accept * 2 + days + 1] = c
    return c
  end

  local function bad_format(what, name, level)
    error("unknown duration format " .. (type(name) == "string" and ("%q"):format(name)
      or tostring(name)) .. " in " .. what .. " (want iso8601, units or nano)", level + 1)
  end

  -- The format bit of a name, or nil. Comparing interned strings keeps codec() in one trace.
  local function bit_of(name)
    if name == "units" then return UNITS end
    if name == "iso8601" then return ISO8601 end
    if name == "nano" then return NANO end
    return nil
  end

  -- Adds the formats of list[first..] to accept. Unrolled for the usual lists of up to three
  -- names: a loop here would become an inner trace of every caller's loop.
  local function accepts(accept, list, first)
    local name = list[first]
    if name == nil then return accept end
    local f = bit_of(name)
    if f == nil then bad_format("accept", name, 3) end
    accept = bor(accept, f)
    name = list[first + 1]
    if name == nil then return accept end
    f = bit_of(name)
    if f == nil then bad_format("accept", name, 3) end
    accept = bor(accept, f)
    name = list[first + 2]
    if name == nil then return accept end
    f = bit_of(name)
    if f == nil then bad_format("accept", name, 3) end
    return accepts(bor(accept, f), list, first + 3)
  end

  -- The codec for these options; the same options give the same codec, without allocating.
  -- Other keys of opts are not looked at.
  function M.codec(opts)
    if type(opts) ~= "table" then
      error("bad argument #1 to 'codec' (table expected, got " .. type(opts) .. ")", 2)
    end
    local name = opts.write
    local write = UNITS
    if name ~= nil then
      write = bit_of(name)
      if write == nil then bad_format("write", name, 2) end
    end
    local accept, list = write, opts.accept
    if list ~= nil then
      if type(list) ~= "table" then
        error("bad option 'accept' to 'codec' (table expected, got " .. type(list) .. ")", 2)
      end
      accept = accepts(accept, list, 1)
    end
    local days = opts.days and 1 or 0
    return codecs[write * 16 + accept * 2 + days + 1] or new_codec(write, accept, days)
  end

  -- The module's reader: every format, days allowed; it writes units (Go's Duration.String).
  local default = new_codec(UNITS, ALL, 1)
  M.default = default

  function M.parse(s)
    local sec, err = decode(default, s, "parse")
    return sec, err
  end

  function M.parse_ns(s)
    local ns, err = decode_ns(default, s, "parse_ns")
    return ns, err
  end

  -- Writes x (seconds, or int64 nanoseconds) in fmt (default "units"), without days.
  function M.format(x, fmt)
    local f = UNITS
    if fmt ~= nil then
      f = bit_of(fmt)
      if f == nil then bad_format("format", fmt, 2) end
    end
    local s, err = encode(x, f, 0, "format")
    return s, err
  end

  return M
end

local M = build(ffi_backend() or classic_backend())

-- The same API over a named backend ("ffi" or "classic"), for benchmarks and specs that compare
-- them; nil when the host cannot offer it.
function M.with_backend(name)
  local be
  if name == "ffi" then be = ffi_backend() elseif name == "classic" then be = classic_backend() end
  if be == nil then return nil end
  local m = build(be)
  m.with_backend = M.with_backend
  return m
end

return M
