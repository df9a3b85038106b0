-- zever.config: the application's configuration, in layers:
--
--   built-in zero-infra defaults (config/schema.lua)
--   -> zever.yaml or zever.json in dir (strict: unknown sections and fields are errors)
--   -> zever.<environment>.yaml (or .json) when ZEVER_ENV is development, test or production
--   -> environment variables <SECTION>_<FIELD> (config/env.lua)
--   -> checks across fields (config/validate.lua)
--
--   config.load{ dir = ".", env = nil | table | getenv, environment = "production" }
--                               -> cfg | nil, err
--   config.defaults()           -> cfg with every default
--   config.redact(cfg)          -> a deep copy with secrets replaced by "[REDACTED]"
--   config.scrub(cfg, msg)      -> msg with every secret value of cfg replaced
--   config.render(cfg)          -> YAML text of cfg (redact it first), loadable as zever.yaml
--   config.plain(cfg)           -> a copy with durations written as text ("10s"), for JSON
--   config.sources(cfg)         -> { files = {...}, environment = name|nil, vars = {...},
--                                    dir = the absolute app folder, origin = { [path] = layer } }
--                                    (origin: "zever.yaml" or "$VAR" for each field a layer set;
--                                    a field absent from it has its default)
--
-- cfg is a plain table of sections (cfg.http.listen, cfg.db.dsn, ...); durations are seconds.
-- Paths the schema marks (db.dsn's sqlite file, db.migrations, mailer.log_file, ...) come out
-- absolute, resolved against dir (config/paths.lua), never against the current directory.
-- cfg.app is the free-form section of the app's own settings (APP_<KEY> in the environment).
-- err is a zever.errors error { battery = "config", code = "invalid", message = "...",
-- errors = { {file, line, path, var, message} } } whose tostring is its message (as_is);
-- message has one line per problem, in reading order. No message contains
-- a configured value. This file only sequences the layers; it must not know a section by name.

local schema = require "zever.config.schema"
local read = require "zever.config.read"
local validate = require "zever.config.validate"
local env = require "zever.config.env"
local redact = require "zever.config.redact"
local paths = require "zever.config.paths"
local errors = require "zever.errors"

local type, pairs, ipairs, next, format, concat, tostring, error =
  type, pairs, ipairs, next, string.format, table.concat, tostring, error

local M = {}

M.schema = schema
M.null = read.NULL
M.ENVIRONMENTS = { "development", "test", "production" }

local meta = require "zever.config.meta"   -- cfg -> its sources (weak keys)

-- Every load starts from the defaults: one constructor compiled from the schema on first use
-- (config/template.lua), ~4 us for 39 sections and 235 fields where filling them took ~20 us.
local make_defaults

function M.defaults()
  if not make_defaults then
    make_defaults = require("zever.config.template").config(schema.sections,
      function(f) return f.default end)
  end
  return make_defaults()
end

local function item_text(item)
  local where
  if item.var then
    where = "environment variable " .. item.var
    if item.path then where = where .. " (" .. item.path .. ")" end
  elseif item.file then
    where = item.file
    if item.line then where = where .. ":" .. item.line end
    if item.path then where = where .. ": " .. item.path end
  else
    where = item.path or "config"
  end
  return where .. ": " .. item.message
end

local function make_error(items)
  local lines = {}
  for i, item in ipairs(items) do lines[i] = item_text(item) end
  return errors.new("config", "invalid", concat(lines, "\n"), { errors = items, as_is = true })
end
M.error = make_error

local slurp = require("zever.file").read

local function join(dir, name)
  if dir == "." or dir == "" then return name end
  if dir:sub(-1) == "/" then return dir .. name end
  return dir .. "/" .. name
end

-- Reads and merges one layer: base "zever" or overlay "zever.<env>". Returns the file read, if any.
local function layer(cfg, dir, base, state)
  local ypath, jpath = join(dir, base .. ".yaml"), join(dir, base .. ".json")
  local ysrc, jsrc = slurp(ypath), slurp(jpath)
  if ysrc and jsrc then
    local errs = state.errors
    errs[#errs + 1] = { file = ypath, message = "both " .. ypath .. " and " .. jpath .. " exist; keep one" }
    return nil
  end
  local path, src = ypath, ysrc
  if not src then path, src = jpath, jsrc end
  if not src then return nil end
  local tree, lines
  if src == ysrc then tree, lines = read.yaml(src, path) else tree, lines = read.json(src, path) end
  if not tree then
    local errs = state.errors
    errs[#errs + 1] = lines
    return path
  end
  validate.merge(cfg, tree, lines, path, state)
  return path
end

function M.load(opts)
  if opts ~= nil and type(opts) ~= "table" then
    error("config.load: expects a table of options, got " .. type(opts), 2)
  end
  opts = opts or {}
  local dir = opts.dir or "."
  if type(dir) ~= "string" then error("config.load: dir must be a string", 2) end
  local source = opts.env
  local st = type(source)
  if source ~= nil and st ~= "table" and st ~= "function" then
    error("config.load: env must be a table or a getenv-like function, not " .. st, 2)
  end
  local environment = opts.environment
  if environment == nil then environment = env.get(source, "ZEVER_ENV") end
  if environment == "" then environment = nil end

  local cfg = M.defaults()
  local state = { errors = {}, origin = {}, line = {}, applied = {} }
  local files = {}
  local f = layer(cfg, dir, "zever", state)
  if f then files[#files + 1] = f end
  if environment ~= nil then
    local known = false
    for _, e in ipairs(M.ENVIRONMENTS) do
      if e == environment then known = true end
    end
    if not known or type(environment) ~= "string" then
      local errs = state.errors
      errs[#errs + 1] = { var = "ZEVER_ENV", message = "unknown environment" ..
        validate.did_you_mean(tostring(environment), M.ENVIRONMENTS, "environments") }
    else
      f = layer(cfg, dir, "zever." .. environment, state)
      if f then files[#files + 1] = f end
    end
  end
  env.apply(cfg, source, state)
  if #state.errors == 0 then validate.check(cfg, state) end
  if #state.errors > 0 then return nil, make_error(state.errors) end
  local root = paths.absolute(dir)
  paths.resolve(cfg, root)
  meta[cfg] = { files = files, environment = environment, vars = state.applied, dir = root,
    origin = state.origin }
  return cfg
end

function M.sources(cfg)
  return meta[cfg] or { files = {}, vars = {}, origin = {} }
end

function M.redact(cfg)
  return redact.copy(cfg)
end

function M.scrub(cfg, msg)
  return redact.scrub(msg, redact.secrets(cfg))
end

-- --- rendering ------------------------------------------------------------------------------

local function duration_text(v)
  if type(v) ~= "number" then return v end
  local s = require("zever.duration").format(v)
  return s or v
end

-- A copy with durations as text, for JSON; other values as they are.
function M.plain(cfg)
  local out = {}
  for name, section in pairs(cfg) do
    local s = schema.by_name[name]
    local t = {}
    for k, v in pairs(section) do
      local field = s and s.by_name[k]
      t[k] = (field and field.type == "duration") and duration_text(v) or v
    end
    out[name] = t
  end
  return out
end

-- A scalar as YAML that reads back as the same value.
local function yaml_value(v)
  if type(v) == "string" then
    if v ~= "" and read.resolve(v) == v and v:find("^[%w%./_~%+%(%$]") and not v:find(": ", 1, true)
      and not v:find("%s#") and not v:find("[%[%]{}\t\"'\\]") and not v:find("%s$") and v:sub(-1) ~= ":" then
      return v
    end
    return '"' .. v:gsub('[%c"\\]', function(c)
      if c == "\n" then return "\\n" end
      if c == '"' or c == "\\" then return "\\" .. c end
      return format("\\x%02x", c:byte())
    end) .. '"'
  end
  if type(v) == "number" then
    if v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then return format("%d", v) end
    return format("%.17g", v)
  end
  return tostring(v)
end

-- A free-form value as YAML lines at indent (mappings sorted by key, lists in order).
local function yaml_tree(out, v, indent)
  local function yaml_scalar(x)                     -- read.NULL is a table: it reads back as null
    if x == read.NULL then return "null" end
    return yaml_value(x)
  end
  local pad = string.rep("  ", indent)
  if v[1] ~= nil then
    for _, x in ipairs(v) do
      if type(x) == "table" and x ~= read.NULL and next(x) ~= nil then
        out[#out + 1] = pad .. "-"
        yaml_tree(out, x, indent + 1)
      else
        out[#out + 1] = pad .. "- " .. ((type(x) == "table" and x ~= read.NULL) and "{}" or yaml_scalar(x))
      end
    end
    return
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local x = v[k]
    local key = yaml_scalar(k)
    if type(x) == "table" and next(x) ~= nil then
      out[#out + 1] = pad .. key .. ":"
      yaml_tree(out, x, indent + 1)
    elseif type(x) == "table" then
      out[#out + 1] = pad .. key .. ": {}"
    else
      out[#out + 1] = pad .. key .. ": " .. yaml_scalar(x)
    end
  end
end

-- YAML text: sections and fields in schema order, unknown ones (none after load) at the end.
function M.render(cfg)
  local out = {}
  local p = M.plain(cfg)
  for _, s in ipairs(schema.sections) do
    local t = p[s.name]
    if s.free then
      if t and next(t) ~= nil then
        out[#out + 1] = s.name .. ":"
        yaml_tree(out, t, 1)
      end
    elseif t then
      out[#out + 1] = s.name .. ":"
      for _, fld in ipairs(s.fields) do
        if t[fld.name] ~= nil then out[#out + 1] = "  " .. fld.name .. ": " .. yaml_value(t[fld.name]) end
      end
    end
  end
  return concat(out, "\n") .. "\n"
end

return M
