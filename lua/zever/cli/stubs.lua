-- zever.cli.stubs: the handler stubs `zever gen` keeps in step with the schema, in the app's own
-- handlers/ folder (outside generated/, so `rm -rf generated && zever gen` never drops them):
-- handlers/<service>.lua for each service with HTTP routes, handlers/jobs.lua for the jobs.
-- A missing file is written whole; an existing one gets a stub appended (before its final
-- `return M`) for each RPC or job it does not define yet. Nothing that exists is ever changed:
-- a file without a final `return M` is left alone and reported.
--
--   stubs.sync(ir, root[, { dry_run = true }]) -> { added = { "handlers/x.lua: Svc.Rpc", ... },
--                                                  skipped = { "handlers/y.lua: why", ... } }
--
-- It must not know the compiler beyond the IR's services, rpcs and jobs.

local format, concat = string.format, table.concat

local M = {}

local snake = require("dsl.ir").snake

local slurp = require("zever.file").read

-- The names a handlers file defines: function M.Name, M.Name =, or Name = in a returned table.
local function defined(src)
  local names = {}
  for name in src:gmatch("function%s+M%.([%w_]+)") do names[name] = true end
  for name in src:gmatch("M%.([%w_]+)%s*=") do names[name] = true end
  for name in src:gmatch("%[?[\"']?([%w_]+)[\"']?%]?%s*=%s*function") do names[name] = true end
  return names
end
M.defined = defined

local function rpc_stub(svc, rpc)
  local args = {}
  for i, f in ipairs(rpc.inputs or {}) do args[i] = f.name .. ": " .. tostring(f.type or "?") end
  return format("\n-- %s %s  %s(%s)%s\nfunction M.%s(input, ctx) -- luacheck: no unused args\n" ..
    '  return nil, { code = "unimplemented", message = %q }\nend\n', rpc.method, rpc.path,
    rpc.name, concat(args, ", "), rpc.output and (" -> " .. tostring(rpc.output)) or "",
    rpc.name, svc.name .. "." .. rpc.name .. " is not written yet")
end

local function job_stub(job)
  return format("\n-- job %s\nfunction M.%s(args, job) -- luacheck: no unused args\n" ..
    '  error("job %s is not written yet")\nend\n', job.name, job.name, job.name)
end

local HEAD = "-- %s: yours. `zever gen` appends a stub for each %s\n" ..
  "-- the schema declares that this file does not define yet; it never changes what is here.\n" ..
  "\nlocal M = {}\n"

-- Brings one file up to date with wanted = { { name =, text = } }; records what it did.
local function sync_file(path, rel, what, wanted, out, dry_run)
  local src = slurp(path)
  local missing = {}
  local have = src and defined(src) or {}
  for _, w in ipairs(wanted) do
    if not have[w.name] then missing[#missing + 1] = w end
  end
  if #missing == 0 then return true end
  local body = {}
  for _, w in ipairs(missing) do body[#body + 1] = w.text end
  local new
  if not src then
    new = format(HEAD, rel, what) .. concat(body) .. "\nreturn M\n"
  else
    local head, tail = src:match("^(.*\n)(return%s+M%s*)$")
    if not head then
      out.skipped[#out.skipped + 1] = format("%s: it does not end with `return M`; add %s by hand",
        rel, (function()
          local n = {}
          for i, w in ipairs(missing) do n[i] = w.name end
          return concat(n, ", ")
        end)())
      return true
    end
    new = head .. concat(body):gsub("^\n", head:match("\n\n$") and "" or "\n") .. "\n" .. tail
  end
  for _, w in ipairs(missing) do out.added[#out.added + 1] = rel .. ": " .. w.label end
  if dry_run then return true end
  local dir = path:match("^(.*)/[^/]*$")
  os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")
  local f, err = io.open(path, "wb")
  if not f then return nil, err end
  f:write(new)
  f:close()
  return true
end

function M.sync(ir, root, opts)
  opts = opts or {}
  root = (root or "."):gsub("/+$", "")
  local out = { added = {}, skipped = {} }
  for _, svc in ipairs(ir.services or {}) do
    local wanted = {}
    for _, rpc in ipairs(svc.rpcs or {}) do
      if rpc.method and rpc.path then
        wanted[#wanted + 1] = { name = rpc.name, label = svc.name .. "." .. rpc.name,
          text = rpc_stub(svc, rpc) }
      end
    end
    if #wanted > 0 then
      local rel = "handlers/" .. snake(svc.name) .. ".lua"
      local ok, err = sync_file(root .. "/" .. rel, rel, "RPC of " .. svc.name, wanted, out,
        opts.dry_run)
      if not ok then return nil, err end
    end
  end
  local jobs = {}
  for _, job in ipairs(ir.jobs or {}) do
    jobs[#jobs + 1] = { name = job.name, label = "job " .. job.name, text = job_stub(job) }
  end
  if #jobs > 0 then
    local ok, err = sync_file(root .. "/handlers/jobs.lua", "handlers/jobs.lua", "job", jobs, out,
      opts.dry_run)
    if not ok then return nil, err end
  end
  return out
end

-- zever gen's part: after a successful run, the stubs of the app whose generated/ folder is
-- flags.out (its parent folder; "." for the default). Prints each stub it added and each file
-- it left alone. Returns an exit code (0, or 1 when a file could not be written).
function M.run(result, flags)
  if not result or not result.ir then return 0 end
  local backends = flags.backend
  if backends then
    local want = false
    for _, b in ipairs(backends) do want = want or b == "routes" or b == "jobs" end
    if not want then return 0 end
  end
  local out = (flags.out or "generated"):gsub("/+$", "")
  local root = out:match("^(.*)/[^/]*$") or "."
  local dry = flags["dry-run"]
  local report, err = M.sync(result.ir, root, dry and { dry_run = true } or nil)
  if not report then
    io.stderr:write("zever gen: handler stubs: ", tostring(err), "\n")
    return 1
  end
  -- --json and --dry-run: the caller prints the report (as JSON, or as "would add stub" lines).
  if not flags.json and not dry then
    for _, line in ipairs(report.added) do print("added stub " .. line) end
  end
  for _, line in ipairs(report.skipped) do io.stderr:write("zever gen: left ", line, "\n") end
  return 0, report
end

return M
