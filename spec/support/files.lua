-- spec.support.files: files and folders for specs: temporary folders, reading and writing
-- whole files, unique names. Each spec makes its own fixtures with these; none is shared.

local M = {}

local function sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  return (out:gsub("%s+$", ""))
end
M.sh = sh

-- The contents of path, or nil when it cannot be read.
function M.slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- The contents of path; raises when it cannot be read (a file the spec expects to exist).
function M.read(path)
  local s = M.slurp(path)
  if s == nil then error("cannot read " .. tostring(path), 2) end
  return s
end

-- The contents of path, or "" when it does not exist (yet): a log another process writes.
function M.text(path)
  return M.slurp(path) or ""
end

-- Writes text to path (creating its folder when missing); returns path.
function M.write(path, text)
  local f = io.open(path, "wb")
  if not f then
    local dir = path:match("^(.*)/[^/]*$")
    if dir then os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'") end
    f = assert(io.open(path, "wb"))
  end
  f:write(text)
  f:close()
  return path
end

-- A new folder under /tmp (prefix names it) holding files = { ["rel/path"] = text, or true
-- for an empty folder }. The caller removes it (M.rm_rf) when it is done.
function M.tmpdir(files, prefix)
  local dir = sh("mktemp -d /tmp/" .. (prefix or "zever-spec") .. "-XXXXXX")
  assert(dir ~= "", "mktemp failed")
  for name, text in pairs(files or {}) do
    if text == true then
      os.execute("mkdir -p '" .. (dir .. "/" .. name):gsub("'", "'\\''") .. "'")
    else
      M.write(dir .. "/" .. name, text)
    end
  end
  return dir
end

-- A path for a new SQLite file (none there yet), and its removal with the WAL and shared-memory
-- files SQLite leaves beside it.
function M.tmp_sqlite()
  local path = os.tmpname()
  os.remove(path)
  return path
end

function M.rm_sqlite(path)
  for _, suffix in ipairs { "", "-wal", "-shm" } do os.remove(path .. suffix) end
end

function M.rm_rf(path)
  if path and path:match("^/tmp/.") then os.execute("rm -rf '" .. path:gsub("'", "'\\''") .. "'") end
end

local serial = 0
-- A name no other call in this process returns: "spec:<prefix>:<n>:<pid>".
function M.unique(prefix)
  serial = serial + 1
  return ("spec:%s:%d:%d"):format(prefix, serial, require("zever.sys").getpid())
end

-- The same as an SQL identifier: "<prefix>_<n>" (table names).
function M.unique_ident(prefix)
  serial = serial + 1
  return ("%s_%d"):format(prefix, serial)
end

return M
