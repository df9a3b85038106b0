-- zever.cdef.<name>: the one FFI declaration of each C function and type Lua calls, generated at
-- build time from host/<dir>/<name>_ffi.h (Makefile: build/ffi.h). These rows fail when Lua
-- types a declaration again, when a generated module drifts from its header, or when a type or
-- function of an FFI header is declared a second time elsewhere in host/.
local ffi = require "ffi"
local sys = require "zever.sys"

local HOME = sys.home()
local CDEF = "ffi" .. ".cdef" -- spelled in two parts so that this file does not match itself

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

-- Every file under dir (relative to the home) whose name ends with one of the suffixes.
local function walk(dir, suffixes, out)
  out = out or {}
  local names = sys.listdir(HOME .. "/" .. dir)
  if not names then return out end
  for _, name in ipairs(names) do
    local rel = dir .. "/" .. name
    if name ~= "node_modules" and sys.isdir(HOME .. "/" .. rel) then
      walk(rel, suffixes, out)
    else
      for _, suffix in ipairs(suffixes) do
        if name:sub(-#suffix) == suffix then out[#out + 1] = rel end
      end
    end
  end
  return out
end

-- The FFI headers: { name = "cache", path = "host/cache/cache_ffi.h" }, ...
local function ffi_headers()
  local list = {}
  for _, path in ipairs(walk("host", { "_ffi.h" })) do
    list[#list + 1] = { name = path:match("([%w_]+)_ffi%.h$"), path = path }
  end
  return list
end

-- The names a declaration text declares: typedef'd types, struct tags, functions, variables.
local function declared(text)
  local types, funcs = {}, {}
  for name in text:gmatch("}%s*([%w_]+)%s*;") do types[name] = true end
  for name in text:gmatch("typedef%s+struct%s+[%w_]+%s+([%w_]+)%s*;") do types[name] = true end
  for name in text:gmatch("typedef%s+[%w_ ]-%s([%w_]+)%s*;") do types[name] = true end
  for name in text:gmatch("([%w_]+)%s*%(") do
    if not name:match("^void$") then funcs[name] = true end
  end
  for name in text:gmatch("extern%s+[%w_%s%*]-([%w_]+)%s*;") do funcs[name] = true end
  return types, funcs
end

describe("zever.cdef", function()
  it("is the only place Lua declares C: no Lua file calls the FFI's cdef", function()
    local offenders = {}
    for _, dir in ipairs({ "lua", "cmd", "dsl", "spec", "bench", "examples" }) do
      for _, path in ipairs(walk(dir, { ".lua" })) do
        -- Peer code run by nginx's own LuaJIT (bench/tfb/nginx, and the unpacked OpenResty
        -- libraries in bench/http/vendor, ignored by git) cannot load zever.cdef.
        -- bench/prekit_libc.lua declares two libc calls for the pre-kit binary, which has no
        -- zever.cdef.libc (it is loaded only there).
        local peer = path:find("^bench/tfb/nginx/") or path:find("^bench/http/vendor/")
          or path == "bench/prekit_libc.lua"
        if not peer and read(HOME .. "/" .. path):find(CDEF, 1, true)
          and path ~= "spec/host/cdef_spec.lua" then
          offenders[#offenders + 1] = path
        end
      end
    end
    assert.are.same({}, offenders)
  end)

  it("preloads one module per FFI header, and nothing else", function()
    local want, have = {}, {}
    for _, h in ipairs(ffi_headers()) do want[#want + 1] = "zever.cdef." .. h.name end
    for key in pairs(package.preload) do
      if key:match("^zever%.cdef%.") then have[#have + 1] = key end
    end
    table.sort(want)
    table.sort(have)
    assert.is_true(#want >= 10)
    assert.are.same(want, have)
  end)

  describe("each module", function()
    for _, h in ipairs(ffi_headers()) do
      describe(h.name, function()
        local text = require("zever.cdef." .. h.name)
        local header = read(HOME .. "/" .. h.path)
        local types, funcs = declared(text)

        it("declares what its header declares, every function in the header's own words", function()
          assert.is_true(next(funcs) ~= nil)
          for name in pairs(funcs) do
            assert.is_truthy(header:find(name, 1, true), name .. " is not in " .. h.path)
          end
          -- Each generated line is a line of the header once macros are expanded: compare
          -- the declarations without spaces, line by line, up to the first macro use.
          local flat = header:gsub("%s+", "")
          for line in text:gmatch("[^\n]+") do
            local bare = line:gsub("%s+", "")
            if not bare:find("%d") then
              assert.is_truthy(flat:find(bare, 1, true), "not in " .. h.path .. ": " .. line)
            end
          end
        end)

        it("resolves every function and type in this host", function()
          -- A module of a lazy folder (lib/zever/<folder>.so) resolves once its binding loaded:
          -- as the adapters do, require the binding of the header's folder first.
          local folder = h.path:match("^host/([^/]+)/")
          for _, m in ipairs({ folder, folder .. "_core" }) do
            if package.preload["zever." .. m] then require("zever." .. m) end
          end
          for name in pairs(funcs) do
            local ok = pcall(function() return ffi.C[name] end)
            assert.is_true(ok, name .. " is not exported by bin/zever")
          end
          for name in pairs(types) do
            if not name:match("^sqlite3_int64$") and not name:match("^clockid_t$") then
              assert.is_true(pcall(ffi.typeof, name), name)
            end
          end
        end)

        it("is the only declaration of its types and zever functions under host/", function()
          for _, path in ipairs(walk("host", { ".h", ".c" })) do
            if path ~= h.path then
              local src = read(HOME .. "/" .. path)
              for name in pairs(types) do
                if name:match("^zv_") then
                  assert.is_nil(src:find("}%s*" .. name .. "%s*;"), name .. " typed again in " .. path)
                  assert.is_nil(src:find("typedef%s+struct%s+[%w_]+%s+" .. name .. "%s*;"),
                    name .. " typed again in " .. path)
                end
              end
              if path:sub(-2) == ".h" then
                for name in pairs(funcs) do
                  if name:match("^zv_") then
                    assert.is_nil(src:find("[%w_%*]%s+%**" .. name .. "%s*%b();"),
                      name .. " declared again in " .. path)
                  end
                end
              end
            end
          end
        end)
      end)
    end
  end)
end)
