-- dsl.ir: the resolved schema's vocabulary (scalars, SQL-ish column types, HTTP statuses of error
-- codes, table names) and its golden text form. The resolver (dsl/resolver.lua) builds the IR;
-- the backends read it. This module must not check anything: it only names and prints.
--
--   ir.SCALARS              scalar type name -> SQL-ish column type
--   ir.ERROR_STATUS         gRPC-style error code -> HTTP status
--   ir.snake(name)          -> "BlogPost" -> "blog_post"
--   ir.plural(word)         -> "category" -> "categories"
--   ir.table_name(entity)   -> "BlogPost" -> "blog_posts" (snake_case, plural)
--   ir.dump(ir)             -> the IR as indented text, one node a line (the golden .ir format)
--
-- The IR is plain tables. Every node has kind, line, col (and top-level nodes file); top-level
-- lists (entities, enums, messages, services, jobs, schedules) are sorted by qualified name,
-- lists inside a node keep the source order (columns, enum values, inputs, errors).

local concat, sort = table.concat, table.sort
local format = string.format
local type, pairs, ipairs, tostring = type, pairs, ipairs, tostring

local M = {}

M.SCALARS = {
  uuid = "uuid", string = "text", bool = "boolean", bytes = "blob", json = "json",
  int32 = "integer", int64 = "bigint", float32 = "real", float64 = "double",
  timestamp = "timestamp", date = "date",
}

-- The gRPC-style codes and the HTTP status each maps to (the grpc-gateway mapping), owned by the
-- routes runtime that serves them (zever.rpc).
M.ERROR_STATUS = require("zever.rpc").ERROR_STATUS

-- "BlogPost" -> "blog_post", "HTTPRequest" -> "http_request", "user_id" stays.
function M.snake(name)
  local s = name:gsub("(%u+)(%u%l)", "%1_%2"):gsub("(%l)(%u)", "%1_%2"):gsub("(%d)(%u)", "%1_%2")
  return s:lower()
end

-- English plural of a lowercase word, by the common rules only (no irregular nouns): a
-- consonant and y -> ies; s, x, z, ch, sh -> es; else s.
function M.plural(word)
  if word:match("[^aeiou]y$") then return word:sub(1, -2) .. "ies" end
  if word:match("[sxz]$") or word:match("[cs]h$") then return word .. "es" end
  return word .. "s"
end

-- The table of an entity: its name in snake_case with the last word in the plural
-- (Task -> tasks, BlogPost -> blog_posts, Category -> categories).
function M.table_name(name)
  return M.plural(M.snake(name))
end

-- dump ------------------------------------------------------------------------------------------

local HEAD = { kind = true, name = true, line = true, col = true, pos = true }

local function quote(v)
  if type(v) == "string" then return (format("%q", v):gsub("\\\n", "\\n")) end
  return tostring(v)
end

local function is_node(v)
  return type(v) == "table" and v.kind ~= nil
end

local function is_node_list(v)
  return type(v) == "table" and v.kind == nil and is_node(v[1])
end

-- A plain table (no kind) inline: arrays as [a, b], maps as {k=v} sorted by key.
local function inline(v)
  if type(v) ~= "table" then return quote(v) end
  local out = {}
  if #v > 0 then
    for i, x in ipairs(v) do out[i] = inline(x) end
    return "[" .. concat(out, ", ") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  sort(keys)
  for i, k in ipairs(keys) do out[i] = k .. "=" .. inline(v[k]) end
  return "{" .. concat(out, " ") .. "}"
end

local function dump_node(node, indent, out)
  local head = { indent .. node.kind }
  if node.name then head[#head + 1] = node.name end
  if node.line then head[#head + 1] = format("@%d:%d", node.line, node.col or 0) end
  local scalars, children = {}, {}
  for key, v in pairs(node) do
    if not HEAD[key] then
      if is_node(v) or is_node_list(v) then
        children[#children + 1] = key
      elseif not (type(v) == "table" and next(v) == nil) then
        scalars[#scalars + 1] = key
      end
    end
  end
  sort(scalars)
  sort(children)
  for _, key in ipairs(scalars) do head[#head + 1] = key .. "=" .. inline(node[key]) end
  out[#out + 1] = concat(head, " ")
  for _, key in ipairs(children) do
    local v = node[key]
    out[#out + 1] = indent .. "  " .. key .. ":"
    if is_node(v) then
      dump_node(v, indent .. "    ", out)
    else
      for _, item in ipairs(v) do dump_node(item, indent .. "    ", out) end
    end
  end
end
-- Interpreted only: Debian's LuaJIT (2.1.0~beta3+git20220320, GC64) compiled this function's
-- pairs() loop into a trace that moves lj_vm_next's 64-bit result through a 32-bit xchg, and
-- the trace then read the key through the truncated pointer: the test process died of SIGSEGV
-- (a core dump: trace 185, dsl/ir.lua:84, `xchg %eax,%edx` after `call lj_vm_next`). Only the
-- specs' goldens dump the IR: never a request or a command.
require("jit").off(dump_node)

-- The IR as indented text: kind, name, @line:col, then scalar fields sorted by key (plain
-- tables inline), then child nodes and lists; empty lists are left out. Deterministic.
function M.dump(ir)
  local out = {}
  dump_node(ir, "", out)
  return concat(out, "\n") .. "\n"
end

return M
