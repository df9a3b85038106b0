-- req:form() and req:files(): urlencoded and multipart/form-data bodies (the streaming parser of
-- host/http/multipart.c through zever.multipart), sent through a real socket by curl -F,
-- Python's http.client and raw bodies.

local zever = require "zever"
local testing = require "zever.testing"
local json = require "zever.json"
local files = require "spec.support.files"
local hs = require "spec.support.http_script"
local process = require "spec.support.process"

local q = process.quote
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/zever"
local FETCH = here .. "/../support/http_fetch.py"

-- What the app answers: the fields, and per file its metadata, whether it was spooled, its
-- temporary path (to check it is gone afterwards) and its content.
local function describe_form(req, res, opts)
  local form, err = req:form(opts)
  if not form then
    return res:status(err.status):json({ error = err.code, message = err.message })
  end
  local out = {}
  for i, f in ipairs(req:files()) do
    out[i] = { name = f.name, filename = f.filename, content_type = f.content_type or json.null,
      size = f.size, spooled = f.path ~= nil, path = f.path or json.null, content = f:read() }
  end
  return { fields = form, files = json.array(out) }
end

-- Posts each body with http.client on one connection; returns the results (status, h, data).
local function post_py(port, path, rows)
  local reqs, tmp = {}, {}
  for i, row in ipairs(rows) do
    local f = os.tmpname()
    files.write(f, row.body)
    tmp[i] = f
    reqs[i] = { method = "POST", path = path, body_file = f,
      headers = { ["Content-Type"] = row.ctype or "multipart/form-data; boundary=XyZ" } }
  end
  local spec = os.tmpname()
  files.write(spec, json.encode(reqs))
  local read = hs.python(function(out) return { FETCH, port, out, spec } end)
  assert(testing.run_until(read, 25), "http_fetch.py did not finish")
  os.remove(spec)
  for _, f in ipairs(tmp) do os.remove(f) end
  local out = assert(json.decode(read()))
  for _, r in ipairs(out) do r.data = r.body and json.decode(r.body) end
  return out
end

local function part(name, value, extra)
  return "--XyZ\r\nContent-Disposition: form-data; name=\"" .. name .. "\"" .. (extra or "")
    .. "\r\n\r\n" .. value .. "\r\n"
end

describe("req:form", function()
  local app, srv, port, dir

  setup(function()
    dir = files.tmpdir({}, "zever-forms")
    app = zever.app()
    app:post("/form", function(req, res) return describe_form(req, res) end)
    app:post("/form/many", function(req, res) return describe_form(req, res, { max_parts = 20000 }) end)
    app:post("/form/small", function(req, res)
      return describe_form(req, res, { max_field_bytes = 10, spool_bytes = 16, tmpdir = dir })
    end)
    srv = testing.serve(app, { limits = { max_body_bytes = 4 * 1048576 } })
    port = srv.port
  end)

  teardown(function()
    if srv then srv:close() end
    files.rm_rf(dir)
  end)

  describe("urlencoded", function()
    it("parses fields, '+' and escapes, and name[] lists", function()
      local r = srv:post("/form", { body = "a=1&b=x+y%21&c[]=1&c[]=2&a=3",
        headers = { ["Content-Type"] = "application/x-www-form-urlencoded" } })
      assert.equal(200, r.status)
      local v = json.decode(r.body)
      assert.same({ a = "3", b = "x y!", c = { "1", "2" } }, v.fields)
    end)

    it("answers 413 past max_parts fields", function()
      local body = ("k=v&"):rep(1000) .. "k=v"
      local r = srv:post("/form", { body = body,
        headers = { ["Content-Type"] = "application/x-www-form-urlencoded" } })
      assert.equal(413, r.status)
      assert.equal("too_large", json.decode(r.body).error)
    end)

    it("answers 415 for a body that is no form", function()
      local r = srv:post("/form", { body = "{}", headers = { ["Content-Type"] = "application/json" } })
      assert.equal(415, r.status)
      assert.equal("unsupported", json.decode(r.body).error)
    end)
  end)

  describe("multipart through curl -F", function()
    it("gives fields, small files in memory and large files spooled, then removes them", function()
      local small = dir .. "/hello.txt"
      files.write(small, "hello upload\n")
      local big = dir .. "/big.txt"
      files.write(big, ("0123456789abcdef"):rep(16384)) -- 256 KiB: over spool_bytes (64 KiB)
      local out = hs.curl(("-F name=Ann -F 'tags[]=a' -F 'tags[]=b' -F %s -F %s %s")
        :format(q("doc=@" .. small .. ";type=text/plain"), q("big=@" .. big),
          q("http://127.0.0.1:" .. port .. "/form")))
      local v = assert(json.decode(out), out)
      assert.same({ name = "Ann", tags = { "a", "b" } }, v.fields)
      assert.equal(2, #v.files)
      local doc, bf = v.files[1], v.files[2]
      assert.equal("doc", doc.name)
      assert.equal("hello.txt", doc.filename)
      assert.equal("text/plain", doc.content_type)
      assert.equal(13, doc.size)
      assert.is_false(doc.spooled)
      assert.equal("hello upload\n", doc.content)
      assert.equal("big", bf.name)
      assert.equal(262144, bf.size)
      assert.is_true(bf.spooled)
      assert.equal(files.read(big), bf.content)
      -- The temporary file was made by mkstemp, not from the client's name, and is gone.
      assert.is_truthy(bf.path:match("/zever%-upload%-[%w]+$"), bf.path)
      assert.is_nil(io.open(bf.path, "rb"))
    end)

    it("spools past a route's spool_bytes into its tmpdir and cleans up", function()
      local f = dir .. "/seventeen.txt"
      files.write(f, ("x"):rep(17))
      local out = hs.curl(("-F %s %s"):format(q("f=@" .. f), q("http://127.0.0.1:" .. port
        .. "/form/small")))
      local v = assert(json.decode(out), out)
      assert.is_true(v.files[1].spooled)
      assert.equal(dir, v.files[1].path:match("^(.*)/[^/]*$"))
      assert.equal(("x"):rep(17), v.files[1].content)
      assert.equal("", files.sh("ls " .. q(dir) .. " | grep zever-upload || true"))
    end)

    it("answers 413 with a JSON error for a field over max_field_bytes", function()
      local out = hs.curl(("-s -w '\\n%%{http_code}' -F note=%s %s"):format(("y"):rep(11),
        q("http://127.0.0.1:" .. port .. "/form/small")))
      local body, code = out:match("^(.*)\n(%d+)$")
      assert.equal("413", code)
      local v = json.decode(body)
      assert.equal("too_large", v.error)
      assert.equal("field 'note' is larger than 10 bytes", v.message)
    end)
  end)

  describe("multipart golden rows through http.client", function()
    local rows = {
      { name = "one field", body = part("a", "1") .. "--XyZ--\r\n", status = 200,
        fields = { a = "1" } },
      { name = "the boundary inside a line of data", status = 200,
        body = part("a", "x --XyZ y--XyZ--") .. "--XyZ--", fields = { a = "x --XyZ y--XyZ--" } },
      { name = "a partial delimiter in data", status = 200,
        body = part("a", "x\r\n--Xy\r\n-\r\r\n--X") .. "--XyZ--", fields = { a = "x\r\n--Xy\r\n-\r\r\n--X" } },
      { name = "a CR right before the delimiter", status = 200,
        body = part("a", "v\r") .. "--XyZ--", fields = { a = "v\r" } },
      { name = "an empty value", status = 200, body = part("a", "") .. "--XyZ--", fields = { a = "" } },
      { name = "a preamble and an epilogue", status = 200,
        body = "preamble\r\n" .. part("a", "1") .. "--XyZ--\r\nepilogue --XyZ\r\n", fields = { a = "1" } },
      { name = "white space after a delimiter", status = 200,
        body = "--XyZ  \r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--XyZ--",
        fields = { a = "1" } },
      { name = "a quoted boundary parameter", status = 200, ctype = 'multipart/form-data; boundary="XyZ"',
        body = part("a", "1") .. "--XyZ--", fields = { a = "1" } },
      { name = "a missing final boundary", status = 400, body = part("a", "1"),
        message = "the body ends before the final boundary" },
      { name = "a body cut inside data", status = 400, body = "--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nabc",
        message = "the body ends before the final boundary" },
      { name = "LF-only delimiter lines", status = 400,
        body = "--XyZ\nContent-Disposition: form-data; name=a\n\n1\n--XyZ--",
        message = 'a boundary delimiter is followed by something other than CRLF or "--"' },
      { name = "a header line ending in LF alone", status = 400,
        body = "--XyZ\r\nContent-Disposition: form-data; name=a\n\r\n1\r\n--XyZ--",
        message = "a part's header line is malformed" },
      { name = "a folded header line", status = 400,
        body = "--XyZ\r\nContent-Disposition: form-data; name=a\r\nX-Note: a\r\n b\r\n\r\n1\r\n--XyZ--",
        message = "a part's header line is malformed" },
      { name = "huge part headers", status = 413,
        body = "--XyZ\r\nContent-Disposition: form-data; name=a\r\nX-Pad: " .. ("p"):rep(9000)
          .. "\r\n\r\n1\r\n--XyZ--", message = "a part's header section is too large" },
      { name = "a part without Content-Disposition", status = 400,
        body = "--XyZ\r\nContent-Type: text/plain\r\n\r\n1\r\n--XyZ--",
        message = "a part has no Content-Disposition header" },
      { name = "a disposition other than form-data", status = 400,
        body = "--XyZ\r\nContent-Disposition: attachment; name=a\r\n\r\n1\r\n--XyZ--",
        message = "a part's Content-Disposition is not form-data with a name" },
      { name = "no boundary parameter", status = 400, ctype = "multipart/form-data",
        body = part("a", "1") .. "--XyZ--", message = "the boundary parameter is missing or invalid" },
      { name = "a 71-byte boundary", status = 400, ctype = "multipart/form-data; boundary=" .. ("b"):rep(71),
        body = "x", message = "the boundary parameter is missing or invalid" },
      { name = "the delimiter followed by other bytes", status = 400,
        body = part("a", "x\r\n--XyZ!") .. "--XyZ--",
        message = 'a boundary delimiter is followed by something other than CRLF or "--"' },
      { name = "1001 parts over max_parts", status = 413,
        body = part("a", "1"):rep(1001) .. "--XyZ--", message = "too many parts" },
    }
    local results
    setup(function() results = post_py(port, "/form", rows) end)

    for i, row in ipairs(rows) do
      it("answers " .. row.name .. " with " .. row.status, function()
        local r = results[i]
        assert.equal(row.status, r.status, r.body)
        if row.fields then assert.same(row.fields, r.data.fields) end
        if row.message then assert.equal(row.message, r.data.message) end
      end)
    end

    it("parses 10k parts when the route allows them", function()
      local body = {}
      for i = 1, 10000 do body[i] = part("f" .. i, tostring(i)) end
      body[#body + 1] = "--XyZ--\r\n"
      local r = post_py(port, "/form/many", { { body = table.concat(body) } })[1]
      assert.equal(200, r.status)
      local n = 0
      for k, v in pairs(r.data.fields) do
        n = n + 1
        assert.equal("f" .. v, k)
      end
      assert.equal(10000, n)
    end)

    it("never takes a file name as a path and keeps an encoded name's text", function()
      local body = part("f", "data", '; filename="../../etc/passwd"')
        .. part("g", "x", "; filename*=UTF-8''na%C3%AFve%20file.txt")
        .. part("h", "y", '; filename="C:\\\\Users\\\\a\\\\b.txt"')
        .. part("empty", "", '; filename=""') .. "--XyZ--"
      local r = post_py(port, "/form", { { body = body } })[1]
      assert.equal(200, r.status, r.body)
      local got = {}
      for _, f in ipairs(r.data.files) do got[f.name] = f.filename end
      assert.same({ f = "passwd", g = "naïve file.txt", h = "b.txt" }, got)
    end)
  end)
end)
