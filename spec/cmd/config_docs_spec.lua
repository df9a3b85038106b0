-- docs/config.md mirrors lua/zever/config/schema.lua: its table has a row for every field, with
-- the field's default, so a field added to the schema cannot be left undocumented.

local schema = require "zever.config.schema"
local sys = require "zever.sys"

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function shown(field)
  local v = field.default
  if field.type == "duration" then return nil end         -- written as units ("10s"): not compared
  if type(v) == "string" then return v == "" and '`""`' or "`" .. v .. "`" end
  return "`" .. tostring(v) .. "`"
end

describe("docs/config.md", function()
  local doc = read(sys.home() .. "/docs/config.md")

  it("has a table row for every field of the schema, with its default", function()
    for _, s in ipairs(schema.sections) do
      for _, f in ipairs(s.fields) do
        local row = doc:match("\n| " .. f.path:gsub("%p", "%%%0") .. " |[^\n]*")
        assert.truthy(row, f.path .. " has no row in docs/config.md")
        local want = shown(f)
        if want then assert.truthy(row:find(" | " .. want .. " |", 1, true), f.path .. ": " .. row) end
      end
      if s.free then
        assert.truthy(doc:find("\n| " .. s.name .. ".* |", 1, true), s.name .. " has no row")
      end
    end
  end)
end)
