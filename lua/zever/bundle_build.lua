-- zever.bundle_build: writes a bundle, one executable file holding the zever host and a payload
-- (the format: host/sys/bundle.h; the reader: zever.bundle, in C). `zever bundle` calls it.
--
--   build.collect(opts) -> files | nil, err     files: { [name] = bytes }
--   build.pack(host, files) -> the bundle's bytes (host .. payload .. index .. trailer), and
--                              its content hash (16 hex digits: the index's hash)
--   build.write(path, bytes) -> true | nil, err (under a temporary name, renamed, mode 0755)
--   build.glob(pattern) -> a function(rel) -> boolean (gitignore-like: "*.md", "docs/**",
--                          a pattern without "/" matches a file's name in any folder)
--
-- opts = { home = zever home | nil (from the running bundle), app = absolute app folder,
--          exclude = { globs }, include = { globs }, revision = "git revision" | nil,
--          keep_debug = true to keep the shared objects' debug info (stripped otherwise) }
--
-- What goes in, under these names:
--   lua/..., cmd/..., dsl/...   the framework's Lua, compiled to bytecode with debug info (the
--                               chunk named after its path: tracebacks keep file:line)
--   build/commands.lua          the command index `--help` lists from
--   lib/<folder>.so             the LAZY modules (lib/zever/*.so next to the host)
--   app/<path>                  the app folder: .lua compiled like the framework (chunk named
--                               after the app-relative path), every other file as it is
--   meta/build                  "key=value" lines: zever's version, the app's revision
-- Reproducible: names sorted, no timestamps, no absolute paths: same inputs, same bytes.
-- It must not run the app.

local sys = require "zever.sys"
local bundle = require "zever.bundle"
local file = require "zever.file"

local concat, sort, format = table.concat, table.sort, string.format

local M = {}

-- Files of an app folder never bundled unless --include names them: version control, local
-- databases and logs, the app's specs and earlier bundles.
M.DEFAULT_EXCLUDE = { ".*", "*.db", "*.db-wal", "*.db-shm", "*.db-journal", "*.sqlite",
  "*.sqlite3", "*.log", "spec/**", "dist/**", "node_modules/**", "tmp/**" }

function M.glob(pattern)
  if type(pattern) ~= "string" or pattern == "" then error("glob: want a pattern", 2) end
  local anchored = pattern:find("/", 1, true) ~= nil
  local p = pattern:gsub("^/", ""):gsub("[%^%$%(%)%%%.%[%]%+%-]", "%%%0")
  p = p:gsub("%*%*/", "\1"):gsub("%*%*", "\2"):gsub("%*", "[^/]*"):gsub("%?", "[^/]")
  p = p:gsub("\1", ".-"):gsub("\2", ".*")
  p = "^" .. p .. "$"
  return function(rel)
    if anchored then return rel:match(p) ~= nil end
    for part in rel:gmatch("[^/]+") do
      if part:match(p) then return true end
    end
    return false
  end
end

local function matchers(list)
  local out = {}
  for i, g in ipairs(list or {}) do out[i] = M.glob(g) end
  return out
end

local function any(ms, rel)
  for _, m in ipairs(ms) do if m(rel) then return true end end
  return false
end

-- Every file below root/rel (relative names, sorted), skipping what skip(rel) refuses.
local function walk(root, rel, out, skip)
  local dir = rel == "" and root or (root .. "/" .. rel)
  for _, name in ipairs(sys.listdir(dir) or {}) do
    local r = rel == "" and name or (rel .. "/" .. name)
    if not skip(r) then
      if sys.isdir(root .. "/" .. r) then walk(root, r, out, skip) else out[#out + 1] = r end
    end
  end
  return out
end

-- LuaJIT writes a table constructor's constant keys (a template table's hash part) in hash
-- order, and its string hashes are seeded per process: the same source dumps to different
-- bytes from one run to the next. normalize() rewrites each template's key/value pairs in
-- sorted order (same length, same table), walking the dump as lj_bcwrite.c lays it out:
--   header: "\27LJ" version, uleb flags, [uleb len + chunk name unless stripped]
--   protos: uleb length, then flags numparams framesize numuv (1 byte each), uleb sizekgc,
--           uleb sizekn, uleb sizebc, [uleb sizedbg, [uleb firstline, uleb numline]],
--           sizebc * 4 bytes of bytecode, numuv * 2 bytes, the kgc constants, ...; a 0 ends
--   kgc: uleb tp: 0 child, 1 table (uleb narray, uleb nhash, values, key/value pairs),
--        2/3 int64 (2 ulebs), 4 complex (4 ulebs), >= 5 a string of tp - 5 bytes
--   a table value: uleb tp: 0 nil, 1 false, 2 true, 3 int (uleb), 4 num (2 ulebs), >= 5 string
local byte, sub = string.byte, string.sub

local function uleb(s, p)
  local v, shift = 0, 0
  repeat
    local b = byte(s, p)
    v = v + (b % 128) * 2 ^ shift
    shift, p = shift + 7, p + 1
  until b < 128
  return v, p
end

local function ktabk(s, p)
  local tp
  tp, p = uleb(s, p)
  if tp == 3 then
    local _; _, p = uleb(s, p)
  elseif tp == 4 then
    local _; _, p = uleb(s, p); _, p = uleb(s, p)
  elseif tp >= 5 then
    p = p + tp - 5
  end
  return p
end

function M.normalize(bc)
  local flags, p = uleb(bc, 5)
  if flags % 4 < 2 then -- BCDUMP_F_STRIP is 2: a chunk name follows
    local n; n, p = uleb(bc, p); p = p + n
  end
  local out = { sub(bc, 1, p - 1) }
  while true do
    local len, body = uleb(bc, p)
    if len == 0 then break end
    local stop = body + len
    local numuv = byte(bc, body + 3)
    local q = body + 4
    local sizekgc, sizebc, sizedbg, _
    sizekgc, q = uleb(bc, q)
    _, q = uleb(bc, q)
    sizebc, q = uleb(bc, q)
    if flags % 4 < 2 then
      sizedbg, q = uleb(bc, q)
      if sizedbg > 0 then _, q = uleb(bc, q); _, q = uleb(bc, q) end
    end
    q = q + sizebc * 4 + numuv * 2
    out[#out + 1] = sub(bc, p, q - 1)
    for _ = 1, sizekgc do
      local start, tp = q
      tp, q = uleb(bc, q)
      if tp == 1 then
        local narray, nhash
        narray, q = uleb(bc, q)
        nhash, q = uleb(bc, q)
        for _ = 1, narray do q = ktabk(bc, q) end
        local pairs_ = {}
        local head = sub(bc, start, q - 1)
        for i = 1, nhash do
          local k = q
          q = ktabk(bc, ktabk(bc, q))
          pairs_[i] = sub(bc, k, q - 1)
        end
        sort(pairs_)
        out[#out + 1] = head .. concat(pairs_)
      else
        if tp == 2 or tp == 3 then _, q = uleb(bc, q); _, q = uleb(bc, q)
        elseif tp == 4 then for _ = 1, 4 do _, q = uleb(bc, q) end
        elseif tp >= 5 then q = q + tp - 5 end
        out[#out + 1] = sub(bc, start, q - 1)
      end
    end
    out[#out + 1] = sub(bc, q, stop - 1)
    p = stop
  end
  out[#out + 1] = sub(bc, p)
  return concat(out)
end

-- The bytecode of a Lua source, its chunk named after name (debug info kept), normalized.
local function compile(src, name)
  local fn, err = loadstring(src, "@" .. name)
  if not fn then return nil, err end
  return M.normalize(string.dump(fn))
end

local function framework(opts, files)
  if not opts.home then
    -- Bundling from a bundle: its own framework files, libraries and command index.
    for _, prefix in ipairs({ "lua/", "cmd/", "dsl/", "lib/", "build/" }) do
      for _, name in ipairs(bundle.list(prefix)) do files[name] = bundle.read(name) end
    end
    return true
  end
  local home = opts.home
  for _, top in ipairs({ "lua", "cmd", "dsl" }) do
    local rels = walk(home .. "/" .. top, "", {}, function(r) return r:match("^testdata") or
      r:match("/testdata$") or r:match("^%.") or r:match("/%.") end)
    for _, r in ipairs(rels) do
      local name = top .. "/" .. r
      local src = file.read(home .. "/" .. name)
      if name:match("%.lua$") then
        local bc, err = compile(src, name)
        if not bc then return nil, err end
        files[name] = bc
      else
        files[name] = src
      end
    end
  end
  local summaries = require("cmd.zever").summaries()
  files["build/commands.lua"] = assert(compile(require("zever.cli.index").render(summaries),
    "build/commands.lua"))
  local exe = sys.exe()
  local libdir = exe:match("^(.*)/[^/]*$") .. "/../lib/" .. exe:match("([^/]*)$")
  for _, so in ipairs(sys.listdir(libdir) or {}) do
    if so:match("%.so$") then
      local bytes = file.read(libdir .. "/" .. so)
      files["lib/" .. so] = opts.keep_debug and bytes or M.strip(bytes)
    end
  end
  return true
end

function M.collect(opts)
  local files = {}
  local ok, err = framework(opts, files)
  if not ok then return nil, err end
  local exclude, include = matchers(M.DEFAULT_EXCLUDE), matchers(opts.include)
  local user = matchers(opts.exclude)
  local function skip(rel)
    if any(user, rel) then return true end
    return any(exclude, rel) and not any(include, rel)
  end
  for _, rel in ipairs(walk(opts.app, "", {}, skip)) do
    local src = file.read(opts.app .. "/" .. rel)
    if src == nil then return nil, format("cannot read %s/%s", opts.app, rel) end
    if rel:match("%.lua$") then
      local bc, cerr = compile(src, rel)
      if not bc then return nil, cerr end
      files["app/" .. rel] = bc
    else
      files["app/" .. rel] = src
    end
  end
  if not files["app/app.lua"] and not files["app/zever.yaml"] and not files["app/zever.json"] then
    return nil, format("%s has no app.lua, zever.yaml or zever.json: not an app folder", opts.app)
  end
  files["meta/build"] = format("zever=%s\nrevision=%s\n", sys.version, opts.revision or "unknown")
  return files
end

function M.pack(host, files)
  local names = {}
  for name in pairs(files) do names[#names + 1] = name end
  sort(names)
  local data, index = {}, { bundle.u32(#names), bundle.hash(host, true) }
  local off = 0
  for i, name in ipairs(names) do
    local bytes = files[name]
    data[i] = bytes
    index[#index + 1] = bundle.u32(#name) .. bundle.u64(off) .. bundle.u64(#bytes) ..
      bundle.hash(bytes, true) .. name
    off = off + #bytes
  end
  local idx = concat(index)
  local index_off = #host + off
  local trailer = bundle.u64(#host) .. bundle.u64(index_off) .. bundle.u64(#idx) ..
    bundle.hash(idx, true) .. bundle.u64(0) .. bundle.MAGIC
  return concat({ host, concat(data), idx, trailer }), bundle.hash(idx)
end

-- bytes of an ELF file without its debug sections and symbol table (binutils' strip, which
-- keeps the dynamic symbols that dlsym and LuaJIT's FFI look up), or bytes as they are when
-- strip is missing or fails. strip is deterministic: the same input gives the same output.
function M.strip(bytes)
  local src, dst = os.tmpname(), os.tmpname()
  local f = io.open(src, "wb")
  if not f then return bytes end
  f:write(bytes)
  f:close()
  local ok = os.execute(format("strip -o '%s' '%s' 2>/dev/null", dst, src))
  local out = (ok == 0 or ok == true) and file.read(dst) or nil
  os.remove(src)
  os.remove(dst)
  return out and #out > 0 and out or bytes
end

-- The host's own bytes: the running binary, or the host part of the running bundle; stripped
-- unless keep_debug.
function M.host(keep_debug)
  local bytes = file.read(sys.exe())
  if not bytes then return nil, "cannot read " .. sys.exe() end
  if bundle.active then bytes = bytes:sub(1, bundle.info().host_size) end
  return keep_debug and bytes or M.strip(bytes)
end

function M.write(path, bytes)
  local tmp = path .. ".tmp"
  local f, err = io.open(tmp, "wb")
  if not f then return nil, err end
  local ok, werr = f:write(bytes)
  f:close()
  if not ok then os.remove(tmp); return nil, werr end
  if not os.execute(format("chmod 755 '%s'", tmp:gsub("'", "'\\''"))) then
    os.remove(tmp)
    return nil, "cannot make " .. tmp .. " executable"
  end
  local rok, rerr = os.rename(tmp, path)
  if not rok then os.remove(tmp); return nil, rerr end
  return true
end

return M
