-- zever.model: the runtime of the models.lua the .zen compiler generates (dsl/backends/models.lua).
-- The generated file holds one definition table per entity and calls this module:
--
--   local model = require "zever.model"
--   M.Task = model.new{ name =, module =, table =, primary_key =, columns =, relations = }
--   return model.link(M)          -- relations[*].model = M[relation.target]
--
-- A model is a column node of zever.db's query builder (it renders as the quoted table name
-- wherever the builder takes a table or an expression; tostring gives the table name) that also
-- carries every key of its definition, c (column nodes "table"."column"), rules and validate:
--
--   Task.validate(row[, partial]) -> true | nil, { field = message }
--
-- A column is { name, type, kind, sql, nullable, primary, unique, required, validate, values }
-- where kind is what validate checks: string uuid timestamp date bytes bool int32 int64 float32
-- float64 enum (with values) list message json. This module must not query the database.

local db = require "zever.db"

local type, pairs, ipairs, tostring, error = type, pairs, ipairs, tostring, error
local setmetatable, getmetatable = setmetatable, getmetatable
local floor, format, concat = math.floor, string.format, table.concat

local M = {}

local Model = {}
Model.__index = Model
Model.__tostring = function(m) return m.table end

local FORMATS = {
  email = { "^[^%s@]+@[^%s@]+%.[^%s@]+$", "must be an email address" },
  url = { "^%a[%w+.-]*://[^%s/?#]+[^%s]*$", "must be a URL" },
  uuid = { "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$",
    "must be a UUID" },
}

-- Code points of a UTF-8 string (continuation bytes are not counted).
local function length(s)
  local _, cont = s:gsub("[\128-\191]", "")
  return #s - cont
end

local function plural(n, word)
  return format("%s %s%s", tostring(n), word, n == 1 and "" or "s")
end

local KINDS = {
  string = "string", uuid = "string", timestamp = "string", date = "string", bytes = "string",
  bool = "boolean", int32 = "integer", int64 = "integer", float32 = "number", float64 = "number",
  enum = "string", list = "table", message = "table",
}
local WANT = { string = "must be a string", boolean = "must be true or false",
  integer = "must be an integer", number = "must be a number",
  table = "must be a list or an object" }

-- The message for value v against rule r, or nil when it passes.
local function check(r, v)
  local kind = KINDS[r.kind]
  if kind then
    local t = type(v)
    local ok
    if kind == "integer" then
      ok = (t == "number" and v == floor(v)) or t == "cdata"
    else
      ok = t == kind
    end
    if not ok then return WANT[kind] end
  end
  if r.values and not r.values[v] then return "must be one of " .. r.values_text end
  if r.kind == "uuid" and not v:match(FORMATS.uuid[1]) then return FORMATS.uuid[2] end
  local chars = type(v) == "string" and (r.kind == "bytes" and #v or length(v))
  if r.min_len and chars < r.min_len then
    return "must be at least " .. plural(r.min_len, r.kind == "bytes" and "byte" or "character")
      .. " long"
  end
  if r.max_len and chars > r.max_len then
    return "must be at most " .. plural(r.max_len, r.kind == "bytes" and "byte" or "character")
      .. " long"
  end
  if r.format and not v:match(FORMATS[r.format][1]) then return FORMATS[r.format][2] end
  if r.gt and v <= r.gt then return "must be greater than " .. tostring(r.gt) end
  if r.gte and v < r.gte then return "must be at least " .. tostring(r.gte) end
  if r.lt and v >= r.lt then return "must be less than " .. tostring(r.lt) end
  if r.lte and v > r.lte then return "must be at most " .. tostring(r.lte) end
  return nil
end

-- validate(row[, partial]) -> true | nil, { field = message }. A missing required field (not
-- optional, no default, not an integer primary key) fails unless partial (for updates).
local function validator(rules)
  return function(row, partial)
    if type(row) ~= "table" then error("validate: expects a row (a table)", 2) end
    local errs
    for _, r in ipairs(rules) do
      local v = row[r.name]
      local msg
      if v == nil or v == db.null then
        if r.required and not partial then msg = "is required" end
      else
        msg = check(r, v)
      end
      if msg then
        errs = errs or {}
        errs[r.name] = msg
      end
    end
    if errs then return nil, errs end
    return true
  end
end

-- Raises (blaming the caller of new) unless def is a usable model definition.
local function check_def(def)
  if type(def) ~= "table" then error("model.new: expects a definition table", 3) end
  if type(def.table) ~= "string" or def.table == "" then
    error("model.new: def.table must be a table name", 3)
  end
  if type(def.columns) ~= "table" then error("model.new: def.columns must be a list", 3) end
  if def.relations ~= nil and type(def.relations) ~= "table" then
    error("model.new: def.relations must be a table", 3)
  end
  for i, col in ipairs(def.columns) do
    if type(col) ~= "table" or type(col.name) ~= "string" then
      error(format("model.new: %s column %d has no name", def.table, i), 3)
    end
    local f = col.validate and col.validate.format
    if f ~= nil and not FORMATS[f] then
      error(format("model.new: %s.%s: unknown format %q (email, url, uuid)", def.table, col.name,
        tostring(f)), 3)
    end
    if col.kind == "enum" and type(col.values) ~= "table" then
      error(format("model.new: %s.%s is an enum without values", def.table, col.name), 3)
    end
  end
end

-- A model from def: the column node of its table, with a metatable of its own. Every key of def
-- is copied onto it (the tables are shared, not copied); relations defaults to {}.
function M.new(def)
  check_def(def)
  local m = db.col(def.table)
  setmetatable(m, Model)
  for k, v in pairs(def) do m[k] = v end
  m.relations = m.relations or {}
  m.c = {}
  m.rules = {}
  for _, col in ipairs(def.columns) do
    m.c[col.name] = db.col(def.table .. "." .. col.name)
    local r = { name = col.name, kind = col.kind, required = col.required }
    for k, v in pairs(col.validate or {}) do r[k] = v end
    if col.values then
      r.values = {}
      for _, name in ipairs(col.values) do r.values[name] = true end
      r.values_text = concat(col.values, ", ")
    end
    m.rules[#m.rules + 1] = r
  end
  m.validate = validator(m.rules)
  return m
end

-- True when v is a model made by new.
function M.is_model(v)
  return getmetatable(v) == Model
end

-- Links the relations of every model of models (key -> model) to their target model: relations
-- name it by key (relation.target). Raises naming a target that is not a key of models.
-- Returns models.
function M.link(models)
  if type(models) ~= "table" then error("model.link: expects a table of models", 2) end
  for key, m in pairs(models) do
    if getmetatable(m) ~= Model then
      error(format("model.link: %s is not a model (model.new)", tostring(key)), 2)
    end
    for name, rel in pairs(m.relations) do
      local target = models[rel.target]
      if target == nil then
        error(format("model.link: relation %s.%s names %s, which is not a model", tostring(key),
          tostring(name), tostring(rel.target)), 2)
      end
      rel.model = target
    end
  end
  return models
end

return M
