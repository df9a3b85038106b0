-- dsl.resolver: the stage after the parser. Parsed trees in, the IR (dsl/ir.lua) plus diagnostics
-- out: names bound to declarations, types checked, relations paired, routes and auth checked,
-- jobs and schedules checked.
--
--   resolver.resolve(trees[, opts]) -> ir, diags
--       trees: a list of parser trees (each with .file), or one tree.
--       opts.module_of(file) -> module name; default: the name of the file's folder.
--   resolver.check_cron(expr)       -> true | nil, err   (5 fields, or @daily and friends)
--
-- It never throws on any tree the parser returns (trees with syntax errors are resolved as far as
-- they go). Diagnostics are { file, line, col, pos, phase = "resolve", severity, message }, in the
-- shape dsl/diagnostics.lua renders. It must not print, read files, or know any backend: the IR
-- is all that the backends see.
--
-- Names: every declaration of a module (entity, message, enum, service, job, schedule) shares one
-- namespace; a type of another module is written module.Type. A module's name comes from the
-- file's path (dsl/resolve/common.lua module_of: the first folder under schema/, as in Go).

-- The resolver runs once per command (zever check, gen), where LuaJIT's trace recorder costs more
-- than it wins: with the JIT on, resolving a 200-entity schema took 14.5 ms against 9.8 ms
-- interpreted (bench/check_bench.sh). Every file of the resolver turns it off for itself.
if jit then jit.off(true, true) end

local C = require "dsl.resolve.common"
local cron = require "dsl.resolve.cron"
require "dsl.resolve.types"
require "dsl.resolve.records"
require "dsl.resolve.services"
require "dsl.resolve.work"

local S = C.S
local VALUE_ATTRS = C.VALUE_ATTRS
local module_of = C.module_of
local name_node = C.name_node
local sort = table.sort

local M = {}

M.check_cron = cron.check
M.lua_check_cron = cron.lua_check

-- resolve ---------------------------------------------------------------------------------------

local function by_qname(a, b)
  if a.module ~= b.module then return a.module < b.module end
  return a.name < b.name
end

-- Resolves parsed trees into the IR. See the header for the shape of the result.
function M.resolve(trees, opts)
  if type(trees) ~= "table" then error("resolve: trees must be a table", 2) end
  if trees.kind == "file" then trees = { trees } end
  opts = opts or {}
  local self = setmetatable({ diags = {}, symbols = {}, order = {}, modules = {}, used = {},
    routes = {}, module_of = opts.module_of or module_of }, S)
  -- The methods sit in the state itself, as in the parser of old: `self:member(...)` then finds
  -- its function at the first lookup instead of missing and going through the metatable's
  -- __index (lj_meta_tget: 2.8 M instructions of a 200-entity resolve). No field of the state
  -- is named like a method.
  for name, fn in pairs(S) do
    if type(fn) == "function" then self[name] = fn end
  end
  for _, tree in ipairs(trees) do self:declare(tree) end
  local out = { kind = "ir", entities = {}, messages = {}, enums = {}, services = {}, jobs = {},
    schedules = {}, sagas = {} }
  local function each(kind, fn)
    for _, q in ipairs(self.order) do
      local sym = self.symbols[q]
      if sym.kind == kind then
        self.file, self.mod = sym.file, sym.module
        fn(sym)
      end
    end
  end
  -- An entity's relations and indexes, listed once for the two passes that need them.
  local split = {}
  local function members(sym, kind)
    local s = split[sym]
    if not s then
      s = { relation = {}, index = {} }
      for _, m in ipairs(sym.decl.members or {}) do
        local list = s[m.kind]
        if list then list[#list + 1] = m end
      end
      split[sym] = s
    end
    return s[kind]
  end
  each("entity", function(sym) out.entities[#out.entities + 1] = self:record(sym) end)
  each("message", function(sym) out.messages[#out.messages + 1] = self:record(sym) end)
  each("entity", function(sym)
    for _, r in ipairs(members(sym, "relation")) do
      if r.relation == "belongs_to" then self:belongs_to(sym, r) end
    end
  end)
  each("entity", function(sym)
    for _, r in ipairs(members(sym, "relation")) do
      if r.relation ~= "belongs_to" then self:has(sym, r) end
    end
    for _, ix in ipairs(members(sym, "index")) do self:index(sym, ix) end
  end)
  each("service", function(sym) out.services[#out.services + 1] = self:service(sym) end)
  each("job", function(sym) out.jobs[#out.jobs + 1] = self:job(sym) end)
  each("schedule", function(sym) out.schedules[#out.schedules + 1] = self:schedule(sym) end)
  each("saga", function(sym) out.sagas[#out.sagas + 1] = self:saga(sym) end)
  each("enum", function(sym)
    local d = sym.decl
    local node = { kind = "enum", name = d.name, module = sym.module, file = sym.file,
      line = d.line, col = d.col, doc = d.doc, values = {}, inline = d.inline }
    self:unique_names(d.values or {}, "value", d.name)
    for _, v in ipairs(d.values or {}) do
      local attrs = self:attributes(v.attributes, VALUE_ATTRS, "enum value", v.name)
      local value = { kind = "value", name = v.name, line = v.line, col = v.col }
      if attrs.renamed_from then
        local a = self:one_arg(attrs.renamed_from)
        if a and a.kind == "string" then value.renamed_from = a.value end
      end
      node.values[#node.values + 1] = value
    end
    if not self.used[sym.qname] then self:warn(name_node(d), "enum %s is never used", d.name) end
    out.enums[#out.enums + 1] = node
  end)
  for _, list in pairs({ out.entities, out.messages, out.enums, out.services, out.jobs,
    out.schedules, out.sagas }) do
    sort(list, by_qname)
  end
  local mods = {}
  for m in pairs(self.modules) do mods[#mods + 1] = m end
  sort(mods)
  out.modules = mods
  if self.versions then out.versions = self.versions end
  return out, self.diags
end

return M

