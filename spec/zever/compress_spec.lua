-- zever.middleware.compress: gzip and brotli chosen by Accept-Encoding, checked by real
-- decoders (curl --compressed, gzip -d) over a real socket; the skip rules as rows.

local zever = require "zever"
local testing = require "zever.testing"
local files = require "spec.support.files"
local hs = require "spec.support.http_script"
local process = require "spec.support.process"
local compress = require "zever.middleware.compress"

local q = process.quote
local TEXT = ("The quick brown fox jumps over the lazy dog. "):rep(100) -- 4500 bytes

-- curl with raw arguments against path; returns status, headers (lower-case), body.
local function curl(port, path, args)
  local out = hs.curl("-i " .. args .. " " .. q("http://127.0.0.1:" .. port .. path))
  local head, body = out:match("^(.-)\r\n\r\n(.*)$")
  local h = {}
  for k, v in (head or ""):gmatch("\r\n([^:\r\n]+):%s*([^\r\n]*)") do h[k:lower()] = v end
  return tonumber((head or ""):match("^HTTP/%S+ (%d+)")), h, body
end

describe("zever.middleware.compress", function()
  local srv, port

  setup(function()
    local app = zever.app()
    app:use(compress({ threshold = 1000 }))
    app:get("/text", function() return TEXT end)
    app:get("/json", function()
      local list = {}
      for i = 1, 300 do list[i] = { id = i, name = "item " .. i } end
      return list
    end)
    app:get("/small", function() return "tiny" end)
    app:get("/png", function(_, res) return res:header("Content-Type", "image/png"):send(TEXT) end)
    app:get("/encoded", function(_, res) return res:header("Content-Encoding", "gzip"):send(TEXT) end)
    app:get("/notransform", function(_, res) return res:header("Cache-Control", "no-transform"):send(TEXT) end)
    app:get("/etag", function(_, res) return res:header("ETag", '"v1"'):send(TEXT) end)
    app:get("/nocontent", function(_, res) return res:status(204):send("") end)
    app:get("/random", function(_, res)
      local f = assert(io.open("/dev/urandom", "rb"))
      local s = f:read(4096)
      f:close()
      return res:header("Content-Type", "text/plain"):send(s)
    end)
    srv = testing.serve(app)
    port = srv.port
  end)

  teardown(function() if srv then srv:close() end end)

  it("gzips for a client that accepts gzip, and gzip -d restores the body", function()
    local tmp = os.tmpname()
    local out = hs.curl("-s -H 'Accept-Encoding: gzip' -o " .. q(tmp) .. " -D " .. q(tmp .. ".h")
      .. " " .. q("http://127.0.0.1:" .. port .. "/text") .. "; cat " .. q(tmp .. ".h"))
    assert.is_truthy(out:lower():find("content-encoding: gzip", 1, true), out)
    local raw = files.read(tmp)
    assert.is_true(#raw < #TEXT / 10)
    local p = assert(io.popen("gzip -dc < " .. q(tmp)))
    local plain = p:read("*a")
    p:close()
    assert.equal(TEXT, plain)
    os.remove(tmp)
    os.remove(tmp .. ".h")
  end)

  it("sends brotli when asked, and curl decodes it", function()
    local status, h, body = curl(port, "/text", "-s --compressed -H 'Accept-Encoding: br'")
    assert.equal(200, status)
    assert.equal("br", h["content-encoding"])
    assert.equal("Accept-Encoding", h.vary)
    assert.equal(TEXT, body)
  end)

  it("compresses JSON and follows q-values", function()
    local _, h1, b1 = curl(port, "/json", "-s --compressed -H 'Accept-Encoding: br;q=0.5, gzip'")
    assert.equal("gzip", h1["content-encoding"])
    local list = assert(require("zever.json").decode(b1))
    assert.equal(300, #list)
    assert.same({ id = 1, name = "item 1" }, list[1])
    local _, h2 = curl(port, "/json", "-s --compressed -H 'Accept-Encoding: gzip;q=0.1, br'")
    assert.equal("br", h2["content-encoding"])
  end)

  -- { name, path, Accept-Encoding, Content-Encoding expected, Vary expected }
  local rows = {
    { "no Accept-Encoding", "/text", nil, nil, "Accept-Encoding" },
    { "identity only", "/text", "identity", nil, "Accept-Encoding" },
    { "codings refused", "/text", "gzip;q=0, br;q=0", nil, "Accept-Encoding" },
    { "a body under the threshold", "/small", "gzip", nil, nil },
    { "an already compressed type", "/png", "gzip", nil, nil },
    { "a body already encoded", "/encoded", "br", "gzip", nil },
    { "Cache-Control: no-transform", "/notransform", "gzip", nil, nil },
    { "204", "/nocontent", "gzip", nil, nil },
    { "incompressible bytes", "/random", "gzip", nil, "Accept-Encoding" },
  }
  for _, row in ipairs(rows) do
    it("leaves the body alone for " .. row[1], function()
      local r = srv:get(row[2], { headers = row[3] and { ["Accept-Encoding"] = row[3] } or nil })
      assert.equal(row[4], r.headers["content-encoding"])
      assert.equal(row[5], r.headers.vary)
      if row[2] == "/text" then assert.equal(TEXT, r.body) end
    end)
  end

  it("makes a strong ETag weak when it compresses", function()
    local r = srv:get("/etag", { headers = { ["Accept-Encoding"] = "gzip" } })
    assert.equal('W/"v1"', r.headers.etag)
    assert.equal('"v1"', srv:get("/etag").headers.etag)
  end)

  it("answers HEAD without compressing", function()
    local r = srv:head("/text", { headers = { ["Accept-Encoding"] = "gzip" } })
    assert.is_nil(r.headers["content-encoding"])
  end)

  it("raises on misuse", function()
    for _, o in ipairs({ { level = 0 }, { brotli_quality = 12 }, { threshold = -1 },
      { brotli = false, gzip = false }, { nope = true } }) do
      assert.is_false(pcall(compress, o))
    end
  end)
end)
