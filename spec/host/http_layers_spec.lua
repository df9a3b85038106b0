-- host/http's files call each other in one direction: server.c -> stream.h -> stream.c. stream.c
-- must not call a function defined in server.c (issue 16: no circle between the split files).

local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/host"
local root = here .. "/../.."

local function slurp(path)
  local f = assert(io.open(root .. "/" .. path, "rb"))
  local s = f:read("*a")
  f:close()
  -- Comments say what calls what; only code counts.
  return (s:gsub("/%*.-%*/", ""):gsub("//[^\n]*", ""))
end

-- Names of the functions a C file defines at file scope (static or not).
local function defined(src)
  local names = {}
  for name in src:gmatch("\n[%w_ %*]-([%a_][%w_]*)%([^;{]-%)%s*{") do names[name] = true end
  return names
end

describe("host/http layering", function()
  it("has stream.c call nothing that server.c defines", function()
    local server, stream = slurp("host/http/server.c"), slurp("host/http/stream.c")
    local from_server = defined(server)
    assert.is_true(from_server.zv_http_server_start, "the parser of definitions found nothing")
    for name in pairs(from_server) do
      assert.is_nil(stream:find("%f[%w_]" .. name .. "%f[^%w_]"),
        "stream.c uses " .. name .. " of server.c")
    end
  end)

  it("has server.c reach stream.c only through stream.h", function()
    local server, header = slurp("host/http/server.c"), slurp("host/http/stream.h")
    local stream = defined(slurp("host/http/stream.c"))
    assert.is_truthy(server:find('#include "stream.h"', 1, true))
    for name in pairs(stream) do
      if server:find("%f[%w_]" .. name .. "%f[^%w_]") then
        assert.is_truthy(header:find("%f[%w_]" .. name .. "%f[^%w_]"),
          "server.c calls " .. name .. ", which stream.h does not declare")
      end
    end
  end)
end)
