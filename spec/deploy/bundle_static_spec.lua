-- zever bundle + app:static: a bundled app's static files are served from the bundle's payload
-- (host/http/stream_static.c, docs/static.md "In a bundle"). The bundle is copied alone into an
-- empty folder that also holds a public/ folder of different files, served there with
-- ZEVER_HOME unset, and fetched with curl: full bodies (small ones written from the mapping,
-- large ones sendfile'd), ranges, 304s, HEAD, the precompressed sibling, index files and
-- traversal; what is on disk is never served.

local process = require "spec.support.process"
local files = require "spec.support.files"
local serve = require "spec.support.serve"

local quote = process.quote

-- Deterministic bytes (all 256 values) of length n: a file larger than a single send.
local function bytes_of(n)
  local t, x = {}, 7
  for i = 1, n do
    x = (x * 1103515245 + 12345) % 2147483648
    t[i] = string.char(math.floor(x / 65536) % 256)
  end
  return table.concat(t)
end

describe("zever bundle: app:static served from the payload", function()
  local tmp, run, srv, public, big

  -- curl against srv: status, headers (lower-cased names), body.
  local function fetch(path, extra)
    local hf, bf = tmp .. "/h", tmp .. "/b"
    os.remove(hf)
    os.remove(bf)
    local r = process.run("curl -s -S --max-time 10 --path-as-is " .. (extra or "") ..
      " -D " .. quote(hf) .. " -o " .. quote(bf) .. " " ..
      quote("http://127.0.0.1:" .. srv.port .. path))
    assert.equal(0, r.code, r.stderr)
    local head = files.read(hf)
    local status = tonumber(head:match("^HTTP/1%.1 (%d+)"))
    local h = {}
    for k, v in head:gmatch("\n([%w%-]+): ([^\r]*)\r") do h[k:lower()] = v end
    return status, h, files.slurp(bf) or ""
  end

  setup(function()
    big = bytes_of(300000)
    tmp = files.tmpdir({
      ["app/app.lua"] = [[
local zever = require "zever"
local app = zever.app()
app:static("/assets", "public", { max_age = 60 })
app:get("/hi", function() return "hi" end)
return app
]],
      ["app/public/index.html"] = "<h1>home</h1>\n",
      ["app/public/style.css"] = "body { color: #123; }\n",
      ["app/public/docs/index.html"] = "<p>docs</p>\n",
      ["app/public/img/logo.png"] = "\137PNG\r\n\26\n not really",
      ["app/zever.yaml"] = "app:\n  name: statics\n",
      -- The run folder's own public/: a stale copy and a file the bundle does not carry.
      ["run/public/style.css"] = "stale disk copy\n",
      ["run/public/only-on-disk.css"] = "disk\n",
    }, "zv-bundle-static")
    files.write(tmp .. "/app/public/big.bin", big)
    assert(os.execute("gzip -k -9 " .. quote(tmp .. "/app/public/style.css")))
    public = tmp .. "/app/public"
    local r = process.zever("bundle", tmp .. "/app", "-o", tmp .. "/dist/statics")
    assert(r.code == 0, r.stderr)
    run = tmp .. "/run"
    assert(os.execute("cp " .. quote(tmp .. "/dist/statics") .. " " .. quote(run)))
    local log
    srv, log = serve.start(run, { "--listen", "127.0.0.1:" .. serve.free_port(), "--workers",
      "1" }, { ZEVER_HOME = false }, "serve", run .. "/statics")
    assert(srv, log)
  end)

  teardown(function()
    if srv then srv:kill() end
    files.rm_rf(tmp)
  end)

  it("serves a small and a large file with the bytes that were bundled", function()
    local status, h, body = fetch("/assets/style.css")
    assert.equal(200, status)
    assert.equal(files.read(public .. "/style.css"), body)
    assert.equal("text/css; charset=utf-8", h["content-type"])
    assert.equal("public, max-age=60", h["cache-control"])
    assert.equal("bytes", h["accept-ranges"])
    assert.equal("Accept-Encoding", h["vary"])
    status, h, body = fetch("/assets/big.bin")
    assert.equal(200, status)
    assert.equal(tostring(#big), h["content-length"])
    assert.equal("application/octet-stream", h["content-type"])
    assert.is_true(body == big, "the large body differs from the bundled file")
    status, h = fetch("/assets/img/logo.png")
    assert.equal(200, status)
    assert.equal("image/png", h["content-type"])
    assert.is_nil(h["vary"])
  end)

  it("never serves the disk: a stale copy and a file only on disk are not seen", function()
    local status, _, body = fetch("/assets/style.css")
    assert.equal(200, status)
    assert.not_equal(files.read(run .. "/public/style.css"), body)
    status = fetch("/assets/only-on-disk.css")
    assert.equal(404, status)
  end)

  it("answers ranges with 206, an unsatisfiable one with 416", function()
    local status, h, body = fetch("/assets/big.bin", "-H 'Range: bytes=100000-100099'")
    assert.equal(206, status)
    assert.equal("bytes 100000-100099/" .. #big, h["content-range"])
    assert.equal(big:sub(100001, 100100), body)
    -- A range larger than a single send goes out with sendfile from inside the bundle file.
    status, h, body = fetch("/assets/big.bin", "-H 'Range: bytes=1000-'")
    assert.equal(206, status)
    assert.equal("bytes 1000-" .. (#big - 1) .. "/" .. #big, h["content-range"])
    assert.is_true(body == big:sub(1001), "the large range differs from the bundled bytes")
    status, h, body = fetch("/assets/style.css", "-H 'Range: bytes=-5'")
    assert.equal(206, status)
    assert.equal("5", h["content-length"])
    assert.equal(files.read(public .. "/style.css"):sub(-5), body)
    status, h = fetch("/assets/big.bin", "-H 'Range: bytes=400000-'")
    assert.equal(416, status)
    assert.equal("bytes */" .. #big, h["content-range"])
  end)

  it("gives a content-hash ETag and the bundle's Last-Modified, and answers 304", function()
    local status, h = fetch("/assets/big.bin")
    assert.equal(200, status)
    local etag, lastmod = h["etag"], h["last-modified"]
    assert.matches('^"%x+%-' .. string.format("%x", #big) .. '"$', etag)
    assert.matches("GMT$", lastmod)
    local body
    status, h, body = fetch("/assets/big.bin", "-H " .. quote("If-None-Match: " .. etag))
    assert.equal(304, status)
    assert.equal("", body)
    assert.is_nil(h["content-length"])
    status = fetch("/assets/big.bin", "-H " .. quote("If-Modified-Since: " .. lastmod))
    assert.equal(304, status)
    status = fetch("/assets/big.bin", "-H 'If-None-Match: \"other\"'")
    assert.equal(200, status)
    -- If-Range with the ETag keeps the range; with another one the whole file comes back.
    status = fetch("/assets/big.bin", "-H 'Range: bytes=0-9' -H " .. quote("If-Range: " .. etag))
    assert.equal(206, status)
    status = fetch("/assets/big.bin", "-H 'Range: bytes=0-9' -H 'If-Range: \"x\"'")
    assert.equal(200, status)
    -- A file's ETag differs from another file's.
    local _, h2 = fetch("/assets/style.css")
    assert.not_equal(etag, h2["etag"])
  end)

  it("answers HEAD with the GET's headers and no body", function()
    -- HEAD then GET on one connection: a body after the HEAD's head would corrupt the GET.
    local py = tmp .. "/head.py"
    files.write(py, [[
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("HEAD", "/assets/big.bin")
r = c.getresponse()
print(r.status, r.getheader("Content-Length"), len(r.read()))
c.request("GET", "/assets/style.css")
r = c.getresponse()
sys.stdout.write("%d %s" % (r.status, r.read().decode()))
]])
    local r = process.run(process.PYTHON .. " " .. quote(py) .. " " .. srv.port)
    assert.equal(0, r.code, r.stderr)
    assert.equal("200 " .. #big .. " 0\n200 " .. files.read(public .. "/style.css"), r.stdout)
  end)

  it("serves the precompressed sibling when the client accepts gzip", function()
    local status, h, body = fetch("/assets/style.css", "-H 'Accept-Encoding: gzip'")
    assert.equal(200, status)
    assert.equal("gzip", h["content-encoding"])
    assert.equal("text/css; charset=utf-8", h["content-type"])
    assert.equal(files.read(public .. "/style.css.gz"), body)
    status, h = fetch("/assets/style.css", "-H 'Accept-Encoding: br'")
    assert.equal(200, status)
    assert.is_nil(h["content-encoding"])
  end)

  it("serves a folder's index file and redirects a folder asked without its slash", function()
    local status, h, body = fetch("/assets/")
    assert.equal(200, status)
    assert.equal("<h1>home</h1>\n", body)
    assert.equal("text/html; charset=utf-8", h["content-type"])
    status, h, body = fetch("/assets/docs/")
    assert.equal("text/html; charset=utf-8", h["content-type"])
    assert.equal(200, status)
    assert.equal("<p>docs</p>\n", body)
    status, h = fetch("/assets/docs?x=1")
    assert.equal(301, status)
    assert.equal("/assets/docs/?x=1", h["location"])
    status, h = fetch("/assets")
    assert.equal(301, status)
    assert.equal("/assets/", h["location"])
  end)

  it("refuses traversal out of the folder and hands it to the application (404)", function()
    for _, p in ipairs({ "/assets/../app.lua", "/assets/%2e%2e/app.lua", "/assets/..%2fzever.yaml",
      "/assets/docs/../../zever.yaml", "/assets/%2e%2e%2fzever.yaml", "/assets/.hidden",
      "/assets//style.css", "/assets/docs%00" }) do
      local status, _, body = fetch(p)
      assert.equal(404, status, p)
      assert.not_matches("statics", body, p)
    end
    local status, _, body = fetch("/hi")
    assert.equal(200, status)
    assert.equal("hi", body)
  end)
end)
