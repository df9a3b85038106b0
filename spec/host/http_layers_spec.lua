-- host/http's files call each other in one direction: server.c -> stream.h -> the connections
-- (stream.c, stream_read.c, stream_write.c, stream_static.c, which share stream_int.h). They
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

-- The connections' files, read as one (they call each other through stream_int.h).
local STREAM = {"host/http/stream.c", "host/http/stream_read.c", "host/http/stream_write.c",
  "host/http/stream_static.c"}
local function stream_src()
  local parts = {}
  for i, path in ipairs(STREAM) do parts[i] = slurp(path) end
  return table.concat(parts, "\n")
end

describe("host/http layering", function()
  it("has the stream files call nothing that server.c defines", function()
    local server, stream = slurp("host/http/server.c"), stream_src()
    local from_server = defined(server)
    assert.is_true(from_server.zv_http_server_start, "the parser of definitions found nothing")
    for name in pairs(from_server) do
      assert.is_nil(stream:find("%f[%w_]" .. name .. "%f[^%w_]"),
        "a stream file uses " .. name .. " of server.c")
    end
  end)

  it("has server.c reach the stream files only through stream.h", function()
    local server, header = slurp("host/http/server.c"), slurp("host/http/stream.h")
    local stream = defined(stream_src())
    assert.is_true(stream.zv__http_arm and stream.zv_http_respond and true,
      "the parser of definitions missed the stream files")
    assert.is_truthy(server:find('#include "stream.h"', 1, true))
    for name in pairs(stream) do
      if server:find("%f[%w_]" .. name .. "%f[^%w_]") then
        assert.is_truthy(header:find("%f[%w_]" .. name .. "%f[^%w_]"),
          "server.c calls " .. name .. ", which stream.h does not declare")
      end
    end
  end)
end)
