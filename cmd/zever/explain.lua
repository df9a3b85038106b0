-- zever explain Service.Rpc [paths...]: compiles the .zen schema (default schema/) and tells
-- what one RPC is: where it is declared (file:line:col), its HTTP route, each input with its
-- type, where it is read from and its validation, its auth, its output, and every error it can
-- answer with the HTTP status (the declared errors plus validation and auth). It reads the
-- same IR the routes backend compiles, so it says what the generated routes do; it writes
-- nothing. An unknown name exits 2 with the closest Service.Rpc.

local json = require "zever.json"

local concat, format = table.concat, string.format

local VALIDATE_ORDER = { "format", "min_len", "max_len", "gt", "gte", "lt", "lte" }

local function value_text(v)
  if type(v) == "string" then return (format("%q", v):gsub("\\\n", "\\n")) end
  if type(v) == "number" and v == math.floor(v) and v > -2 ^ 53 and v < 2 ^ 53 then
    return format("%d", v)
  end
  return tostring(v)
end

local function validate_text(rules)
  if not rules then return nil end
  local parts = {}
  for _, k in ipairs(VALIDATE_ORDER) do
    if rules[k] ~= nil then
      parts[#parts + 1] = k .. ": " .. (k == "format" and rules[k] or value_text(rules[k]))
    end
  end
  if #parts == 0 then return nil end
  return "@validate(" .. concat(parts, ", ") .. ")"
end

-- Every rpc of the IR as { svc, rpc, name = "Service.Rpc" }, in IR order.
local function all_rpcs(ir)
  local out = {}
  for _, svc in ipairs(ir.services or {}) do
    for _, rpc in ipairs(svc.rpcs or {}) do
      out[#out + 1] = { svc = svc, rpc = rpc, name = svc.name .. "." .. rpc.name,
        qname = svc.module .. "." .. svc.name .. "." .. rpc.name }
    end
  end
  return out
end

-- The explanation of one rpc as a plain table (the --json output; the text is printed from it).
local function explain(ir, found)
  local routes = require "dsl.backends.routes"
  local index = routes.index(ir)
  local svc, rpc = found.svc, found.rpc
  local auth = rpc.auth or "required"
  local out = {
    name = found.name, module = svc.module, file = svc.file, line = rpc.line, col = rpc.col,
    doc = rpc.doc, auth = auth, auth_missing = rpc.auth == nil or nil, permission = rpc.permission,
    paginated = rpc.paginated or false,
    output = rpc.output, inputs = {}, errors = {},
  }
  if rpc.method and rpc.path then
    out.route = { method = rpc.method, path = rpc.path, pattern = routes.pattern(rpc.path) }
  end
  for _, f in ipairs(rpc.inputs or {}) do
    local t = routes.type_of(f.type, svc.module, index)
    local node = t.kind == "ref" and index[t.ref]
    local values
    if node and node.kind == "enum" then
      values = {}
      for i, v in ipairs(node.values or {}) do values[i] = v.name end
    end
    local default = f.default
    if default == nil then default = f.default_name end
    out.inputs[#out.inputs + 1] = {
      name = f.name, type = f.type, line = f.line, col = f.col,
      from = out.route and routes.source(rpc, f.name) or nil,
      required = not t.optional and default == nil, default = default,
      validate = validate_text(f.validate), values = values,
      unresolved = t.kind == "any" or nil,
    }
  end
  local function add(status, code, why)
    out.errors[#out.errors + 1] = { status = status, code = code, message = why }
  end
  if #out.inputs > 0 or rpc.paginated then
    add(400, "invalid_argument", "the input does not decode or validate (a message per field)")
  end
  if auth == "required" then add(401, "unauthenticated", "no principal from the auth hook") end
  if rpc.permission then add(403, "permission_denied", "authorize says no to " .. rpc.permission) end
  for _, e in ipairs(rpc.errors or {}) do
    add(e.status, e.name, e.message and ("declared: " .. e.message) or "declared")
  end
  table.sort(out.errors, function(a, b)
    if a.status ~= b.status then return a.status < b.status end
    return a.code < b.code
  end)
  return out
end

local function print_text(e)
  local lines = { e.name }
  local function row(label, text)
    lines[#lines + 1] = text == "" and ("  " .. label) or format("  %-10s %s", label, text)
  end
  row("declared", format("%s:%d:%d (service %s, module %s)", e.file or "?", e.line or 0,
    e.col or 0, e.name:match("^[^.]+"), e.module))
  if e.doc then
    for i, l in ipairs((function()
      local t = {}
      for s in (e.doc .. "\n"):gmatch("([^\n]*)\n") do t[#t + 1] = s end
      return t
    end)()) do
      row(i == 1 and "doc" or "", l)
    end
  end
  if e.route then
    row("route", format("%s %s", e.route.method, e.route.path))
  else
    row("route", "none: no http: option, so no route is generated")
  end
  if e.auth == "required" then
    local text = "required"
    if e.permission then
      text = text .. ", permission " .. e.permission .. " (opts.auth must return a principal, "
        .. "opts.authorize must allow it)"
    elseif e.auth_missing then
      text = text .. " by default: the rpc says no auth: (an error, see zever check)"
    else
      text = text .. " (opts.auth must return a principal)"
    end
    row("auth", text)
  else
    row("auth", "none (public)")
  end
  if #e.inputs == 0 then
    row("inputs", "none")
  else
    row("inputs", "")
    local w1, w2 = 0, 0
    for _, i in ipairs(e.inputs) do
      if #i.name > w1 then w1 = #i.name end
      if #i.type > w2 then w2 = #i.type end
    end
    for _, i in ipairs(e.inputs) do
      local notes = {}
      notes[#notes + 1] = i.required and "required" or (i.default ~= nil and ("default " ..
        value_text(i.default)) or "optional")
      if i.from then notes[#notes + 1] = "from the " .. (i.from == "body" and "JSON body" or i.from) end
      if i.values then notes[#notes + 1] = "one of " .. concat(i.values, ", ") end
      if i.validate then notes[#notes + 1] = i.validate end
      if i.unresolved then notes[#notes + 1] = "unresolved type (see zever check)" end
      lines[#lines + 1] = format("    %-" .. w1 .. "s  %-" .. w2 .. "s  %s", i.name, i.type,
        concat(notes, "; "))
    end
  end
  if e.paginated then
    row("paginated", "page_size and page_token in the query; answers { items = [" ..
      (e.output or "?") .. "], next_page_token }")
  end
  row("output", e.output or "none (204 No Content)")
  if #e.errors == 0 then
    row("errors", "none declared")
  else
    row("errors", "")
    local w = 0
    for _, x in ipairs(e.errors) do if #x.code > w then w = #x.code end end
    for _, x in ipairs(e.errors) do
      lines[#lines + 1] = format("    %d  %-" .. w .. "s  %s", x.status, x.code, x.message)
    end
  end
  io.stdout:write(concat(lines, "\n"), "\n")
end

return {
  name = "explain",
  json = true,
  dry_run = false,
  summary = "Explain one RPC of the .zen schema: declaration, route, inputs, auth, errors",
  usage = "zever explain Service.Rpc [paths...] [--json]",
  help = "Paths are .zen files or folders searched for them (default: schema/). Service.Rpc may\n"
    .. "also be module.Service.Rpc, or the bare Rpc when only one service has it.\n"
    .. "Exit codes: 0 explained, 1 the schema cannot be read, 2 usage or an unknown name.",
  flags = {
    { name = "json", summary = "print the explanation as a JSON object" },
  },
  run = function(args, flags)
    local name = args[1]
    if not name then return 2, "which rpc? usage: zever explain Service.Rpc [paths...]" end
    local compile = require "dsl.compile"
    local paths = {}
    for i = 2, #args do paths[#paths + 1] = args[i] end
    if #paths == 0 then paths = { "schema" } end
    local result, err = compile.compile(paths)
    if not result then return 1, err end
    if #result.files == 0 then return 1, "no .zen files found in " .. concat(paths, ", ") end
    local list = all_rpcs(result.ir)
    local found, bare = nil, {}
    for _, r in ipairs(list) do
      if r.name == name or r.qname == name then found = r end
      if r.rpc.name == name then bare[#bare + 1] = r end
    end
    if not found and #bare == 1 then found = bare[1] end
    if not found then
      local names = {}
      for i, r in ipairs(list) do names[i] = r.name end
      local text = require "zever.text"
      local best = text.closest(name, names)
      if not best and not name:find(".", 1, true) then
        -- A bare name (GetBookmar) is compared with the bare rpc names; the suggestion is the
        -- full Service.Rpc.
        local bares = {}
        for i, r in ipairs(list) do bares[i] = r.rpc.name end
        local b = text.closest(name, bares)
        for _, r in ipairs(list) do
          if b and r.rpc.name == b then
            best = r.name
            break
          end
        end
      end
      if #bare > 1 then
        local q = {}
        for i, r in ipairs(bare) do q[i] = r.name end
        return 2, format('"%s" is in several services: say one of %s', name, concat(q, ", "))
      end
      return 2, format('unknown rpc "%s".%s', name, best and format(' Did you mean "%s"?', best) or
        (#names == 0 and " The schema has no rpcs." or ""))
    end
    if result.errors > 0 then
      io.stderr:write(format("zever explain: note: the schema has %d error%s (zever check shows " ..
        "them); this is what resolved\n", result.errors, result.errors == 1 and "" or "s"))
    end
    local e = explain(result.ir, found)
    if flags.json then
      print(json.encode(e))
    else
      print_text(e)
    end
    return 0
  end,
}
