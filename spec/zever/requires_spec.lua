-- The require graph of the Lua tree (lua/, cmd/, dsl/) has no cycle. Every `require "x"` and
-- `require("x")` with a literal name counts, lazy ones inside functions included: a cycle
-- hidden by a lazy require is still a cycle (a front-end and its adapter, say).

local sys = require "zever.sys"

local home = sys.home()

-- Every .lua file below dir (relative to home), sorted.
local function lua_files(dir, out)
  out = out or {}
  local names = sys.listdir(home .. "/" .. dir) or {}
  for _, name in ipairs(names) do
    local rel = dir .. "/" .. name
    if sys.isdir(home .. "/" .. rel) then
      lua_files(rel, out)
    elseif name:match("%.lua$") then
      out[#out + 1] = rel
    end
  end
  return out
end

-- The module name a file answers to on the host's package.path (lua/?.lua, ?.lua, ?/init.lua).
local function module_of(rel)
  local m = rel:gsub("^lua/", ""):gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
  return m
end

local function read(rel)
  local f = assert(io.open(home .. "/" .. rel, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- The literal module names src requires, comments left out.
local function requires_of(src)
  src = src:gsub("%-%-%[(=*)%[.-%]%1%]", ""):gsub("%-%-[^\n]*", "")
  local out, seen = {}, {}
  for name, after in src:gmatch("require%s*%(?%s*[\"']([%w_%.]+)[\"']()") do
    if not seen[name] and not src:find("^%s*%.%.", after) then
      seen[name] = true
      out[#out + 1] = name
    end
  end
  return out
end

-- The first cycle of graph (module -> array of modules) as "a -> b -> a", or nil.
local function find_cycle(graph)
  local state, stack = {}, {}
  local names = {}
  for m in pairs(graph) do names[#names + 1] = m end
  table.sort(names)
  local function visit(m)
    state[m] = "open"
    stack[#stack + 1] = m
    for _, d in ipairs(graph[m] or {}) do
      if graph[d] then
        if state[d] == "open" then
          local from
          for i = #stack, 1, -1 do if stack[i] == d then from = i break end end
          local path = {}
          for i = from, #stack do path[#path + 1] = stack[i] end
          path[#path + 1] = d
          return table.concat(path, " -> ")
        end
        if not state[d] then
          local c = visit(d)
          if c then return c end
        end
      end
    end
    stack[#stack] = nil
    state[m] = "done"
    return nil
  end
  for _, m in ipairs(names) do
    if not state[m] then
      local c = visit(m)
      if c then return c end
    end
  end
  return nil
end

describe("the Lua require graph", function()
  it("reads literal requires, lazy ones and both call forms, but not comments", function()
    local rows = {
      { "plain", 'local a = require "zever.a"', { "zever.a" } },
      { "parens", 'local b = require("adapters.cache.memory")', { "adapters.cache.memory" } },
      { "lazy", 'function f() return require("zever.c").x end', { "zever.c" } },
      { "single quotes", "require 'dsl.gen'", { "dsl.gen" } },
      { "comment", '-- require "zever.no"\nlocal x = 1', {} },
      { "dynamic", 'require("cmd.zever." .. name)', {} },
    }
    for _, r in ipairs(rows) do
      assert.are.same(r[3], requires_of(r[2]), r[1])
    end
  end)

  it("finds a cycle, even through a third module, and none in a tree", function()
    assert.are.equal("a -> b -> a", find_cycle({ a = { "b" }, b = { "a" } }))
    assert.are.equal("a -> b -> c -> a", find_cycle({ a = { "b" }, b = { "c" }, c = { "a" } }))
    assert.is_nil(find_cycle({ a = { "b", "c" }, b = { "c" }, c = { "x" } }))
  end)

  it("has no cycle in lua/, cmd/ and dsl/", function()
    local graph, n = {}, 0
    for _, dir in ipairs({ "lua", "cmd", "dsl" }) do
      for _, rel in ipairs(lua_files(dir)) do
        graph[module_of(rel)] = requires_of(read(rel))
        n = n + 1
      end
    end
    assert.is_true(n > 100, "read " .. n .. " files")
    assert.is_truthy(graph["zever.cache"], "zever.cache is in the graph")
    assert.is_nil(find_cycle(graph))
  end)
end)
