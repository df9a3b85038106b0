-- app:static: files served by zever.http in C (host/http/static.c decides, stream.c sends with
-- sendfile(2)), driven through a real socket by curl, Python's http.client and a raw TCP client.

local zever = require "zever"
local testing = require "zever.testing"
local json = require "zever.json"
local files = require "spec.support.files"
local hs = require "spec.support.http_script"
local process = require "spec.support.process"

local q = process.quote
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/host"
local FETCH = here .. "/../support/http_fetch.py"

local MTIME = 1700000000 -- Tue, 14 Nov 2023 22:13:20 GMT
local LASTMOD = "Tue, 14 Nov 2023 22:13:20 GMT"
local DIGITS = ("0123456789"):rep(10) -- 100 bytes

-- Requests on one keep-alive connection with http.client; a list of results (see http_fetch.py).
local function fetch_py(port, reqs)
  local spec = os.tmpname()
  files.write(spec, json.encode(reqs))
  local read = hs.python(function(out) return { FETCH, port, out, spec } end)
  assert(testing.run_until(read, 25), "http_fetch.py did not finish")
  os.remove(spec)
  local out = assert(json.decode(read()))
  for _, r in ipairs(out) do
    r.h = {}
    for _, kv in ipairs(r.headers) do r.h[kv[1]:lower()] = kv[2] end
  end
  return out
end

-- curl -si of a path sent as it is (--path-as-is); status, headers (lower-case names), body.
local function curl(port, path)
  local out = hs.curl("-i --path-as-is " .. q("http://127.0.0.1:" .. port .. path))
  local head, body = out:match("^(.-)\r\n\r\n(.*)$")
  local h = {}
  for k, v in (head or ""):gmatch("\r\n([^:\r\n]+):%s*([^\r\n]*)") do h[k:lower()] = v end
  return tonumber((head or ""):match("^HTTP/%S+ (%d+)")), h, body
end

describe("app:static", function()
  local dir, outside, app, srv, port, etag

  setup(function()
    outside = files.tmpdir({ ["secret.txt"] = "TOP-SECRET" }, "zever-static-out")
    dir = files.tmpdir({
      ["public/hello.txt"] = "hello static\n",
      ["public/digits.txt"] = DIGITS,
      ["public/index.html"] = "<h1>home</h1>",
      ["public/css/site.css"] = "body{}",
      ["public/app.js"] = "x=1",
      ["public/data.json"] = "{}",
      ["public/pic.png"] = "\137PNG",
      ["public/blob.xyz"] = "??",
      ["public/.env"] = "SECRET=1",
      ["public/noindex"] = true,
      ["public/docs/index.html"] = "<p>docs</p>",
      ["public/gz.txt"] = "plain text body",
      ["public/gz.txt.gz"] = "GZIPPED-BYTES",
      ["public/gz.txt.br"] = "BROTLI-BYTES",
      ["public/onlygz.css"] = "a{}",
      ["public/onlygz.css.gz"] = "GZ-CSS",
      ["public/pic2.png"] = "\137PNG2",
      ["public/pic2.png.gz"] = "never sent",
      ["secret.txt"] = "APP-SECRET",
      ["immutable/v1.js"] = "v1",
    }, "zever-static")
    local pub = dir .. "/public"
    os.execute("ln -s " .. q(outside .. "/secret.txt") .. " " .. q(pub .. "/abs_link.txt"))
    os.execute("ln -s ../secret.txt " .. q(pub .. "/up_link.txt"))
    os.execute("ln -s /etc/passwd " .. q(pub .. "/passwd"))
    os.execute("ln -s hello.txt " .. q(pub .. "/in_link.txt"))
    os.execute("head -c 3145728 /dev/urandom > " .. q(pub .. "/big.bin"))
    os.execute("find " .. q(dir) .. " -exec touch -h -d @" .. MTIME .. " {} +")
    app = zever.app()
    app:static("/assets", pub, { max_age = 60 })
    app:static("/v", dir .. "/immutable", { max_age = 31536000, immutable = true, index = false })
    app:get("/assets/dynamic", function() return "from the app" end)
    app:post("/assets/hello.txt", function() return "posted" end)
    srv = testing.serve(app)
    port = srv.port
    etag = srv:get("/assets/hello.txt").headers.etag
  end)

  teardown(function()
    if srv then srv:close() end
    files.rm_rf(dir)
    files.rm_rf(outside)
  end)

  describe("serving", function()
    it("answers a GET with the file, its type, validators and caching headers", function()
      local r = srv:get("/assets/hello.txt")
      assert.equal(200, r.status)
      assert.equal("hello static\n", r.body)
      assert.equal("text/plain; charset=utf-8", r.headers["content-type"])
      assert.equal("13", r.headers["content-length"])
      assert.equal(LASTMOD, r.headers["last-modified"])
      assert.equal(('"%x-d"'):format(MTIME), r.headers.etag)
      assert.equal("public, max-age=60", r.headers["cache-control"])
      assert.equal("bytes", r.headers["accept-ranges"])
    end)

    it("marks an immutable mount's files so", function()
      local r = srv:get("/v/v1.js")
      assert.equal("v1", r.body)
      assert.equal("public, max-age=31536000, immutable", r.headers["cache-control"])
    end)

    it("picks the Content-Type from the extension", function()
      local rows = {
        { "/assets/index.html", "text/html; charset=utf-8" },
        { "/assets/css/site.css", "text/css; charset=utf-8" },
        { "/assets/app.js", "text/javascript; charset=utf-8" },
        { "/assets/data.json", "application/json" },
        { "/assets/pic.png", "image/png" },
        { "/assets/blob.xyz", "application/octet-stream" },
      }
      for _, row in ipairs(rows) do
        assert.equal(row[2], srv:get(row[1]).headers["content-type"], row[1])
      end
    end)

    it("answers HEAD with the GET's headers and no body", function()
      local r = srv:head("/assets/digits.txt")
      assert.equal(200, r.status)
      assert.equal("100", r.headers["content-length"])
      local py = fetch_py(port, { { method = "HEAD", path = "/assets/digits.txt" },
        { method = "GET", path = "/assets/hello.txt" } })
      assert.equal(200, py[1].status)
      assert.equal("100", py[1].h["content-length"])
      assert.equal(0, py[1].length)
      -- The next response on the connection is intact: HEAD sent no body bytes.
      assert.equal("hello static\n", py[2].body)
    end)

    it("serves the index file of a folder and redirects a folder without its slash", function()
      assert.equal("<h1>home</h1>", srv:get("/assets/").body)
      assert.equal("<p>docs</p>", srv:get("/assets/docs/").body)
      local status, h = curl(port, "/assets/docs?x=1")
      assert.equal(301, status)
      assert.equal("/assets/docs/?x=1", h.location)
      status, h = curl(port, "/assets")
      assert.equal(301, status)
      assert.equal("/assets/", h.location)
    end)

    it("never lists a folder", function()
      assert.equal(404, srv:get("/assets/noindex/").status)
      assert.equal(404, srv:get("/assets/noindex").status)
      assert.equal(404, srv:get("/v/").status)
    end)

    it("leaves other methods, missing files and app routes to the application", function()
      assert.equal("from the app", srv:get("/assets/dynamic").body)
      assert.equal("posted", srv:post("/assets/hello.txt", { body = "x" }).body)
      local r = srv:get("/assets/missing.txt")
      assert.equal(404, r.status)
      assert.equal('{"error":"not_found"}', r.body)
    end)

    it("follows a symlink that stays inside the root", function()
      assert.equal("hello static\n", srv:get("/assets/in_link.txt").body)
    end)

    it("sends a 3 MiB file whole over a keep-alive connection", function()
      local want = files.sh("sha256sum " .. q(dir .. "/public/big.bin")):match("^(%x+)")
      local py = fetch_py(port, { { method = "GET", path = "/assets/big.bin" },
        { method = "GET", path = "/assets/hello.txt" },
        { method = "GET", path = "/assets/big.bin", headers = { Range = "bytes=1000000-" } } })
      assert.equal(200, py[1].status)
      assert.equal(3145728, py[1].length)
      assert.equal(want, py[1].sha256)
      assert.equal("hello static\n", py[2].body)
      assert.equal(206, py[3].status)
      assert.equal(2145728, py[3].length)
      assert.equal("bytes 1000000-3145727/3145728", py[3].h["content-range"])
    end)

    it("finishes a large body to a client that reads slowly through a small window", function()
      -- The socket fills long before 3 MiB are out: the rest goes on each time it drains.
      local want = files.sh("sha256sum " .. q(dir .. "/public/big.bin")):match("^(%x+)")
      local out = hs.client(port, { "rcvbuf:4096", "connect", "send:GET /assets/big.bin HTTP/1.1\\r\\n"
        .. "Host: t\\r\\nConnection: close\\r\\n\\r\\n", "read:10" })
      local body = out:match("^%[eof%].-\r\n\r\n(.*)$")
      assert.is_truthy(body, out:sub(1, 300))
      assert.equal(3145728, #body)
      local tmp = os.tmpname()
      files.write(tmp, body)
      local got = files.sh("sha256sum " .. q(tmp)):match("^(%x+)")
      os.remove(tmp)
      assert.equal(want, got)
    end)

    it("answers pipelined requests in order", function()
      local out = hs.client(port, { "send:GET /assets/hello.txt HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n"
        .. "GET /assets/css/site.css HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n"
        .. "GET /assets/dynamic HTTP/1.1\\r\\nHost: t\\r\\nConnection: close\\r\\n\\r\\n",
        "read:5" })
      local a = out:find("hello static\n", 1, true)
      local b = out:find("body{}", 1, true)
      local c = out:find("from the app", 1, true)
      assert.is_truthy(a and b and c, out)
      assert.is_true(a < b and b < c)
    end)
  end)

  describe("path traversal", function()
    -- Every row must end in the application's 404 and never show a byte of a secret.
    local rows = {
      { "dot-dot", "/assets/../secret.txt" },
      { "dot-dot deeper", "/assets/css/../../secret.txt" },
      { "encoded dot-dot", "/assets/%2e%2e/secret.txt" },
      { "upper-case encoded dot-dot", "/assets/%2E%2E/secret.txt" },
      { "encoded slash", "/assets/..%2fsecret.txt" },
      { "all encoded", "/assets/%2e%2e%2f%2e%2e%2fsecret.txt" },
      { "encoded backslash", "/assets/..%5csecret.txt" },
      { "NUL byte", "/assets/hello.txt%00.html" },
      { "dot segment", "/assets/./hello.txt" },
      { "double slash", "/assets//etc/passwd" },
      { "dotfile", "/assets/.env" },
      { "encoded dotfile", "/assets/%2eenv" },
      { "symlink to an absolute path outside", "/assets/abs_link.txt" },
      { "symlink climbing out", "/assets/up_link.txt" },
      { "symlink to /etc/passwd", "/assets/passwd" },
      { "bad escape", "/assets/%zz" },
      { "truncated escape", "/assets/hello.txt%2" },
      { "overlong UTF-8 dot", "/assets/%c0%ae%c0%ae/secret.txt" },
    }
    for _, row in ipairs(rows) do
      it("refuses " .. row[1] .. " (" .. row[2] .. ")", function()
        local status, h, body = curl(port, row[2])
        assert.equal(404, status)
        -- The application's 404 (the path reached the router), not curl failing elsewhere.
        assert.equal("application/json", h["content-type"])
        assert.is_nil(body:find("SECRET", 1, true))
        assert.is_nil(body:find("root:", 1, true))
      end)
    end

    it("refuses a raw backslash and a raw dot-dot sent byte for byte", function()
      for _, target in ipairs({ "/assets/..\\\\secret.txt", "/assets/../../etc/passwd" }) do
        local out = hs.client(port, { "send:GET " .. target .. " HTTP/1.1\\r\\nHost: t\\r\\n"
          .. "Connection: close\\r\\n\\r\\n", "read:5" })
        assert.is_truthy(out:match("HTTP/1.1 4%d%d"), out)
        assert.is_nil(out:find("SECRET", 1, true))
        assert.is_nil(out:find("root:", 1, true))
      end
    end)
  end)

  describe("conditional requests", function()
    local function get(headers) return srv:get("/assets/hello.txt", { headers = headers }) end

    it("answers 304 without a body when If-None-Match matches", function()
      for _, v in ipairs({ etag, "W/" .. etag, '"nope", ' .. etag, "*" }) do
        local r = get({ ["If-None-Match"] = v })
        assert.equal(304, r.status, v)
        assert.equal("", r.body)
        assert.equal(etag, r.headers.etag)
        assert.is_nil(r.headers["content-length"])
      end
    end)

    it("answers 200 when If-None-Match does not match", function()
      assert.equal(200, get({ ["If-None-Match"] = '"other"' }).status)
      assert.equal(200, get({ ["If-None-Match"] = "garbage" }).status)
    end)

    it("answers 304 when If-Modified-Since is not older than the file", function()
      assert.equal(304, get({ ["If-Modified-Since"] = LASTMOD }).status)
      assert.equal(304, get({ ["If-Modified-Since"] = "Wed, 15 Nov 2023 00:00:00 GMT" }).status)
      assert.equal(200, get({ ["If-Modified-Since"] = "Tue, 14 Nov 2023 22:13:19 GMT" }).status)
      assert.equal(200, get({ ["If-Modified-Since"] = "yesterday" }).status)
    end)

    it("lets If-None-Match decide over If-Modified-Since", function()
      assert.equal(200, get({ ["If-None-Match"] = '"other"', ["If-Modified-Since"] = LASTMOD })
        .status)
    end)
  end)

  describe("Range", function()
    -- { name, Range, status, Content-Range, body }; DIGITS is "0123456789" ten times.
    local rows = {
      { "a closed range", "bytes=0-9", 206, "bytes 0-9/100", "0123456789" },
      { "one byte", "bytes=0-0", 206, "bytes 0-0/100", "0" },
      { "an open range", "bytes=95-", 206, "bytes 95-99/100", "56789" },
      { "a suffix", "bytes=-3", 206, "bytes 97-99/100", "789" },
      { "a range past the end, clipped", "bytes=98-500", 206, "bytes 98-99/100", "89" },
      { "a suffix longer than the file", "bytes=-500", 206, "bytes 0-99/100", DIGITS },
      { "overlapping ranges, merged", "bytes=0-4,3-9", 206, "bytes 0-9/100", "0123456789" },
      { "touching ranges, merged", "bytes=5-9, 0-4", 206, "bytes 0-9/100", "0123456789" },
      { "white space around ranges", "bytes= 1-2 ,", 206, "bytes 1-2/100", "12" },
      { "disjoint ranges: the whole file", "bytes=0-1,5-6", 200, nil, DIGITS },
      { "a start past the end", "bytes=100-", 416, "bytes */100", "" },
      { "a zero suffix", "bytes=-0", 416, "bytes */100", "" },
      { "first > last: ignored", "bytes=5-2", 200, nil, DIGITS },
      { "another unit: ignored", "items=0-5", 200, nil, DIGITS },
      { "garbage: ignored", "bytes=abc", 200, nil, DIGITS },
      { "an empty set: ignored", "bytes=", 200, nil, DIGITS },
      { "17 ranges: ignored", "bytes=" .. ("0-1,"):rep(16) .. "0-1", 200, nil, DIGITS },
      { "a huge number: ignored", "bytes=0-99999999999999999999999", 200, nil, DIGITS },
    }
    for _, row in ipairs(rows) do
      it("answers " .. row[1] .. " (" .. row[2] .. ") with " .. row[3], function()
        local r = srv:get("/assets/digits.txt", { headers = { Range = row[2] } })
        assert.equal(row[3], r.status)
        assert.equal(row[4], r.headers["content-range"])
        assert.equal(row[5], r.body)
        assert.equal(tostring(#row[5]), r.headers["content-length"])
      end)
    end

    it("honours If-Range only for the same ETag or Last-Modified", function()
      local et = srv:get("/assets/digits.txt").headers.etag
      local function ranged(ir)
        return srv:get("/assets/digits.txt", { headers = { Range = "bytes=0-1", ["If-Range"] = ir } })
      end
      assert.equal(206, ranged(et).status)
      assert.equal(206, ranged(LASTMOD).status)
      assert.equal(200, ranged('"stale"').status)
      assert.equal(200, ranged("W/" .. et).status)
      assert.equal(200, ranged("Mon, 13 Nov 2023 00:00:00 GMT").status)
    end)

    it("answers a Range request from http.client on a kept-alive connection", function()
      local py = fetch_py(port, {
        { method = "GET", path = "/assets/digits.txt", headers = { Range = "bytes=10-19" } },
        { method = "GET", path = "/assets/digits.txt", headers = { Range = "bytes=200-" } },
        { method = "GET", path = "/assets/hello.txt" } })
      assert.equal(206, py[1].status)
      assert.equal("0123456789", py[1].body)
      assert.equal(416, py[2].status)
      assert.equal("bytes */100", py[2].h["content-range"])
      assert.equal("hello static\n", py[3].body)
    end)
  end)

  describe("precompressed siblings", function()
    local function get(path, ae)
      return srv:get(path, { headers = ae and { ["Accept-Encoding"] = ae } or nil })
    end

    it("sends name.br or name.gz when the client accepts the coding", function()
      local rows = {
        { "gzip", "GZIPPED-BYTES", "gzip" },
        { "br", "BROTLI-BYTES", "br" },
        { "gzip, br", "BROTLI-BYTES", "br" },
        { "br;q=0.5, gzip", "GZIPPED-BYTES", "gzip" },
        { "*", "BROTLI-BYTES", "br" },
        { "gzip;q=0, br;q=0", "plain text body", nil },
        { "identity", "plain text body", nil },
        { nil, "plain text body", nil },
      }
      for _, row in ipairs(rows) do
        local r = get("/assets/gz.txt", row[1])
        assert.equal(row[2], r.body, tostring(row[1]))
        assert.equal(row[3], r.headers["content-encoding"], tostring(row[1]))
        assert.equal("Accept-Encoding", r.headers.vary)
        assert.equal("text/plain; charset=utf-8", r.headers["content-type"])
      end
    end)

    it("gives each variant its own ETag", function()
      assert.not_equal(get("/assets/gz.txt", "gzip").headers.etag, get("/assets/gz.txt").headers.etag)
    end)

    it("falls back to the other coding or the plain file", function()
      assert.equal("GZ-CSS", get("/assets/onlygz.css", "br, gzip").body)
      assert.equal("a{}", get("/assets/onlygz.css", "br").body)
    end)

    it("never looks for a sibling of an already compressed type", function()
      local r = get("/assets/pic2.png", "gzip")
      assert.equal("\137PNG2", r.body)
      assert.is_nil(r.headers["content-encoding"])
      assert.is_nil(r.headers.vary)
    end)
  end)
end)

describe("app:static arguments", function()
  local dir
  setup(function() dir = files.tmpdir({ ["public/a.txt"] = "a" }, "zever-static-args") end)
  teardown(function() files.rm_rf(dir) end)

  it("raises, blaming the caller, on a bad prefix, root or option", function()
    local app = zever.app()
    local rows = {
      { "assets", dir, nil, "static prefix must start" },
      { "/assets/", dir, nil, "static prefix must start" },
      { "/a//b", dir, nil, "static prefix must start" },
      { "/assets", dir .. "/missing", nil, "is not a folder" },
      { "/assets", dir, { max_age = -1 }, "max_age must be" },
      { "/assets", dir, { max_age = 1.5 }, "max_age must be" },
      { "/assets", dir, { immutable = true }, "immutable needs max_age" },
      { "/assets", dir, { index = "../x" }, "index must be" },
      { "/assets", dir, { listing = true }, "unknown option 'listing'" },
    }
    for _, row in ipairs(rows) do
      local ok, err = pcall(app.static, app, row[1], row[2], row[3])
      assert.is_false(ok)
      assert.is_truthy(err:find(row[4], 1, true), err)
    end
    app:static("/assets", dir)
    local ok, err = pcall(app.static, app, "/assets", dir)
    assert.is_false(ok)
    assert.is_truthy(err:find("mounted already", 1, true))
  end)
end)
