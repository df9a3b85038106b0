-- Request bodies read piece by piece from the socket (req:read, req:body_reader, req:form on a
-- stream_body route; host/http/lx_body.c, stream_read.c): real uploads with curl (-T, -F,
-- --limit-rate), Python's http.client (chunked) and a raw socket client.

local zever = require "zever"
local testing = require "zever.testing"
local json = require "zever.json"
local sched = require "zever.sched"
local files = require "spec.support.files"
local hs = require "spec.support.http_script"
local process = require "spec.support.process"

local q = process.quote
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/http"
local UPLOAD = here .. "/../support/upload_client.py"

local function upload(args)
  local read = hs.spawn(function(out)
    return ("%s %s %s"):format(process.PYTHON, q(UPLOAD), args:gsub("OUT", q(out)))
  end)
  assert(testing.run_until(read, 40), "upload_client.py did not finish")
  return json.decode(read())
end

local function curl(args)
  local out = hs.curl("-w '\\n%{http_code}' " .. args)
  local body, code = out:match("^(.*)\n(%d+)$")
  return tonumber(code), body
end

-- A file of n pseudo-random bytes (so that a misplaced piece shows).
local function data_file(dir, name, n)
  local path = dir .. "/" .. name
  assert(os.execute(("head -c %d /dev/urandom > %s"):format(n, q(path))) == 0)
  return path
end

describe("request body streaming", function()
  local app, srv, dir, base, go, seen, seen_n

  setup(function()
    dir = files.tmpdir({}, "zever-body")
    seen = {}
    seen_n = 0
    local function record(v)
      seen_n = seen_n + 1
      seen[seen_n] = v
    end
    app = zever.app()
    -- Copies the body to a file as it comes, and says in how many pieces it came.
    app:post("/copy", function(req, res)
      local name = dir .. "/copy-" .. req.id
      local f = assert(io.open(name, "wb"))
      local n, pieces = 0, 0
      while true do
        local chunk, err = req:read(65536)
        if err then
          f:close()
          return res:status(err.status):json({ error = err.code })
        end
        if not chunk then break end
        f:write(chunk)
        n, pieces = n + #chunk, pieces + 1
      end
      f:close()
      return { bytes = n, pieces = pieces, file = name }
    end, { stream_body = true })
    app:post("/small", function(req, res)
      local reader, n = req:body_reader(), 0
      for chunk in reader do n = n + #chunk end
      if reader.err then return res:status(reader.err.status):json({ error = reader.err.code }) end
      return { bytes = n }
    end, { stream_body = true, max_body = 1000 })
    app:post("/early", function(_, res)
      return res:status(401):json({ error = "unauthorized" })
    end, { stream_body = true })
    -- Does not read until GET /go: the server must stop reading the socket meanwhile.
    app:post("/slow", function(req)
      local token = sched.token()
      go = function() sched.complete(token, true) end
      sched.await(token)
      local n = 0
      while true do
        local chunk, err = req:read()
        assert(not err, err)
        if not chunk then break end
        n = n + #chunk
      end
      return { bytes = n }
    end, { stream_body = true })
    app:get("/go", function()
      if go then go() end
      return { ok = true }
    end)
    app:post("/gone", function(req)
      local n = 0
      while true do
        local chunk, err = req:read()
        if err then
          record({ bytes = n, code = err.code })
          return
        end
        if not chunk then break end
        n = n + #chunk
      end
      record({ bytes = n, code = "end" })
      return {}
    end, { stream_body = true })
    app:post("/buffered", function(req) return { bytes = #req.body } end)
    app:post("/form", function(req, res)
      local form, err = req:form({ tmpdir = dir, max_parts = 5, max_file_bytes = 3 * 1048576 })
      if not form then return res:status(err.status):json({ error = err.code, message = err.message }) end
      local out = {}
      for i, f in ipairs(req:files()) do
        out[i] = { name = f.name, filename = f.filename, size = f.size, path = f.path or json.null }
        if f.path then
          -- The spooled file has the upload's bytes: copied for the spec to compare.
          os.execute(("cp %s %s"):format(q(f.path), q(dir .. "/spooled-" .. f.name)))
        end
      end
      return { fields = form, files = json.array(out) }
    end, { stream_body = true, max_body = 8 * 1048576 })
    srv = testing.serve(app, { limits = { max_body_bytes = 256 * 1024, body_timeout = 5 } })
    base = srv.base
  end)

  teardown(function()
    if srv then srv:close() end
    files.rm_rf(dir)
  end)

  describe("req:read", function()
    it("reads a 6 MiB curl -T upload in pieces, byte for byte", function()
      local src = data_file(dir, "six.bin", 6 * 1048576)
      local code, body = curl(("-T %s -X POST %s"):format(q(src), q(base .. "/copy")))
      assert.equal(200, code)
      local out = json.decode(body)
      assert.equal(6 * 1048576, out.bytes)
      assert.is_true(out.pieces > 1, "the body came in one piece: it was buffered whole")
      assert.is_true(files.read(out.file) == files.read(src), "the copy differs from the upload")
    end)

    it("decodes a chunked body from Python's http.client", function()
      local src = data_file(dir, "chunked.bin", 3 * 1048576 + 17)
      local out = upload(("chunked %d OUT /copy %s 100000"):format(srv.port, q(src)))
      assert.equal(200, out.status)
      local r = json.decode(out.body)
      assert.equal(3 * 1048576 + 17, r.bytes)
      assert.is_true(files.read(r.file) == files.read(src), "the copy differs from the upload")
    end)

    it("follows a slow client (curl --limit-rate)", function()
      local src = data_file(dir, "slow.bin", 300 * 1024)
      local code, body = curl(("--limit-rate 600k -T %s -X POST %s"):format(q(src), q(base .. "/copy")))
      assert.equal(200, code)
      local r = json.decode(body)
      assert.equal(300 * 1024, r.bytes)
      assert.is_true(files.read(r.file) == files.read(src))
    end)

    it("stops reading the socket while the handler does not read (back-pressure)", function()
      local total = 64 * 1048576
      local out = upload(("stall %d OUT /slow %d"):format(srv.port, total))
      assert.equal(200, out.status)
      assert.equal(total, json.decode(out.body).bytes)
      -- What the kernel's socket buffers and the server's window (256 KiB) hold, not 64 MiB.
      assert.is_true(out.stalled_at < total / 2,
        "the client sent " .. out.stalled_at .. " bytes before the handler read any")
    end)

    it("returns closed to a handler whose client went away midway", function()
      local before = seen_n
      upload(("abort %d OUT /gone %d %d"):format(srv.port, 4 * 1048576, 200000))
      assert.is_true(testing.run_until(function() return seen_n > before end, 10),
        "the handler did not learn that the client went away")
      assert.equal("closed", seen[before + 1].code)
      assert.is_true(seen[before + 1].bytes <= 200000)
    end)
  end)

  describe("limits", function()
    it("answers 413 at once when the Content-Length is over the route's max_body", function()
      local src = data_file(dir, "k2.bin", 2000)
      local code, body = curl(("--data-binary @%s %s"):format(q(src), q(base .. "/small")))
      assert.equal(413, code)
      assert.equal("content_too_large", json.decode(body).error)
    end)

    it("answers 413 when a chunked body grows over the route's max_body", function()
      local src = data_file(dir, "k3.bin", 200000)
      local code, body = curl(("-H 'Transfer-Encoding: chunked' --data-binary @%s %s")
        :format(q(src), q(base .. "/small")))
      assert.equal(413, code)
      assert.equal("too_large", json.decode(body).error)
    end)

    it("reads a small body in full through body_reader", function()
      local code, body = curl(("-H 'Transfer-Encoding: chunked' -d abc %s"):format(q(base .. "/small")))
      assert.equal(200, code)
      assert.equal(3, json.decode(body).bytes)
    end)

    it("buffers a streamed body for a route that did not ask for streaming", function()
      local src = data_file(dir, "k200.bin", 200000)
      local code, body = curl(("-H 'Transfer-Encoding: chunked' --data-binary @%s %s")
        :format(q(src), q(base .. "/buffered")))
      assert.equal(200, code)
      assert.equal(200000, json.decode(body).bytes)
    end)

    it("answers 413 to a buffered route's chunked body over http.max_body_bytes", function()
      local src = data_file(dir, "m1.bin", 1048576)
      local code = curl(("-H 'Transfer-Encoding: chunked' --data-binary @%s %s")
        :format(q(src), q(base .. "/buffered")))
      assert.equal(413, code)
    end)
  end)

  describe("Expect: 100-continue", function()
    it("sends 100 Continue only when the handler reads", function()
      local out = hs.client(srv.port, {
        "send:POST /copy HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 5\\r\\nExpect: 100-continue\\r\\n\\r\\n",
        "read:0.5",
        "send:hello",
        "read:1",
      })
      assert.matches("^%[timeout%]HTTP/1.1 100 Continue\r\n\r\n%[timeout%]HTTP/1.1 200 OK\r\n", out)
      assert.matches('"bytes":5', out)
    end)

    it("answers without 100 Continue, and closes, when the handler does not read", function()
      local out = hs.client(srv.port, {
        "send:POST /early HTTP/1.1\\r\\nHost: t\\r\\nContent-Length: 5\\r\\nExpect: 100-continue\\r\\n\\r\\n",
        "read:2",
      })
      assert.matches("^%[eof%]HTTP/1.1 401 Unauthorized\r\n", out)
      assert.is_nil(out:find("100 Continue", 1, true))
      assert.truthy(out:find("Connection: close", 1, true))
    end)
  end)

  describe("req:form from the socket", function()
    it("spools a 2.5 MiB curl -F file as it arrives and removes it after the response", function()
      local src = data_file(dir, "five.bin", 2621440)
      local code, body = curl(("-F a=1 -F %s -F b=2 %s"):format(q("f=@" .. src), q(base .. "/form")))
      assert.equal(200, code)
      local r = json.decode(body)
      assert.same({ a = "1", b = "2" }, r.fields)
      assert.equal(1, #r.files)
      assert.equal("five.bin", r.files[1].filename)
      assert.equal(2621440, r.files[1].size)
      assert.is_string(r.files[1].path)
      assert.is_true(files.read(dir .. "/spooled-f") == files.read(src), "the spooled file differs")
      assert.is_nil(io.open(r.files[1].path, "rb"), "the temporary file is still there")
    end)

    it("answers 413 for a file over max_file_bytes and leaves no temporary file", function()
      local src = data_file(dir, "big.bin", 4 * 1048576)
      local before = io.popen("ls " .. q(dir) .. " | grep -c zever-upload"):read("*a")
      local code, body = curl(("-F %s %s"):format(q("f=@" .. src), q(base .. "/form")))
      assert.equal(413, code)
      assert.equal("too_large", json.decode(body).error)
      local after = io.popen("ls " .. q(dir) .. " | grep -c zever-upload"):read("*a")
      assert.equal(before, after)
    end)

    it("answers 413 for more parts than max_parts", function()
      local args = {}
      for i = 1, 7 do args[#args + 1] = "-F p" .. i .. "=v" end
      local code, body = curl(("%s %s"):format(table.concat(args, " "), q(base .. "/form")))
      assert.equal(413, code)
      assert.equal("too_large", json.decode(body).error)
    end)

    it("answers 413 when the whole form is over the route's max_body", function()
      local src = data_file(dir, "nine.bin", 9 * 1048576)
      local code = curl(("-F %s %s"):format(q("f=@" .. src), q(base .. "/form")))
      assert.equal(413, code)
    end)
  end)
end)

describe("route options stream_body and max_body", function()
  it("refuses a stream_body that is not a boolean", function()
    local app = zever.app()
    assert.has_error(function() app:post("/x", function() end, { stream_body = 1 }) end,
      "route option stream_body must be a boolean")
  end)

  it("refuses max_body on a route that does not stream", function()
    local app = zever.app()
    assert.has_error(function() app:post("/x", function() end, { max_body = 10 }) end,
      "route option max_body is for stream_body routes (http.max_body_bytes bounds the others)")
  end)
end)
