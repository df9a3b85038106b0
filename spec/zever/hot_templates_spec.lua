-- The tables built on every request keep their keys in precompiled bytecode.
--
-- LuaJIT's parser gives a constructor key whose value is an expression ({ k = f() }) only a nil
-- slot in the constructor's template table, filled by a store right after the table is copied
-- (TDUP, then TSETS). string.dump, which writes build/bc, keeps only the template's non-nil
-- keys, so loaded from build/bc the same store inserts a new key: a rehash, and a store a trace
-- cannot sink. The request path's constructors therefore use constant values and set the fields
-- after (BENCHMARKS.md "Session 10: /hello": 880 instructions a /hello request for
-- response.new's headers; 1,806 instead of 846 for a middleware step's next object).
--
-- The check reads each listed function's bytecode: a TSETS into a register that a TDUP filled,
-- with a key the template does not hold, is such a store. Rows: { file, the line that defines
-- the function }. A function added to the request path belongs here.

local util, vmdef, bit = require "jit.util", require "jit.vmdef", require "bit"
local band, shr = bit.band, bit.rshift

local HOT = {
  { "lua/zever/response.lua", "function M.new(class)" },
  { "lua/zever/request.lua", "function M.new(method, path, query_string, params, source)" },
  { "lua/zever/app.lua", "local function run_chain(chain, i, req, res)" },
  { "lua/zever/app.lua", "function App:dispatch(method, path, query_string, source, streamed)" },
  { "lua/zever/app.lua", "local function match(app, method, path)" },
  { "lua/zever/server.lua", "local function respond(creq, code, body, h)" },
  { "lua/zever/server.lua", "local function access_json(req, res, bytes, started)" },
  { "lua/zever/db.lua", "local function exec_result(self, text, changes, id, message, fields)" },
}

local function opname(ins)
  local op = band(ins, 0xff)
  return (vmdef.bcnames:sub(op * 6 + 1, op * 6 + 6):gsub(" ", ""))
end

-- The keys stored after a TDUP that its template lacks, in fn alone (not its children).
local function missing_keys(fn)
  local out, tdup = {}, {}
  for pc = 1, util.funcinfo(fn).bytecodes - 1 do
    local ins = util.funcbc(fn, pc)
    local op, a = opname(ins), band(shr(ins, 8), 0xff)
    if op == "TDUP" then
      tdup[a] = util.funck(fn, -shr(ins, 16) - 1)
    elseif op == "TSETS" then
      local t, key = tdup[shr(ins, 24)], util.funck(fn, -band(shr(ins, 16), 0xff) - 1)
      if t and rawget(t, key) == nil then
        out[#out + 1] = ("line %d: %s"):format(util.funcinfo(fn, pc).currentline, key)
      end
    elseif not op:match("^TSET") then
      tdup[a] = nil -- the register holds something else now
    end
  end
  return out
end

-- The prototype of chunk (or of one of its descendants) defined at line.
local function proto_at(fn, line)
  if util.funcinfo(fn).linedefined == line then return fn end
  for i = 1, math.huge do
    local k = util.funck(fn, -i)
    if k == nil then return nil end
    if type(k) == "proto" then
      local found = proto_at(k, line)
      if found then return found end
    end
  end
end

local function line_of(path, text)
  local n = 0
  for l in io.lines(path) do
    n = n + 1
    if l:find(text, 1, true) then return n end
  end
end

describe("the request path's table constructors", function()
  local home = require("zever.sys").home()
  for _, row in ipairs(HOT) do
    it("keep every key in the template: " .. row[1] .. " " .. row[2], function()
      local path = home .. "/" .. row[1]
      local line = line_of(path, row[2])
      assert.is_not_nil(line, "not found: " .. row[2])
      local fn = proto_at(assert(loadfile(path)), line)
      assert.is_not_nil(fn, "no function defined at line " .. tostring(line))
      assert.same({}, missing_keys(fn))
    end)
  end

  it("finds a key stored after the copy of a template that lacks it", function()
    local fn = assert(loadstring("local f = ... return { a = 1, b = f() }", "=probe"))
    assert.same({ "line 1: b" }, missing_keys(fn))
    fn = assert(loadstring("local f = ... local t = { a = 1, b = false } t.b = f() return t",
      "=probe"))
    assert.same({}, missing_keys(fn))
  end)
end)
