-- The storage battery's s3 adapter. No S3 server runs here (MinIO is not packaged for Debian),
-- so two things are checked, and the docs say that no real S3 was involved:
--   * adapters.storage.sigv4 signs every request shape the adapter sends exactly as botocore
--     (python3-botocore, the AWS SDK's own signer) signs it, for fixed keys and times;
--   * the storage conformance suite runs on the s3 adapter against a small S3 imitation served
--     by zever in the spec (path-style PUT/GET with Range/HEAD/DELETE/copy), which also checks
--     that each request carries a signature botocore's rules accept for its shape.

local sigv4 = require "adapters.storage.sigv4"
local s3 = require "adapters.storage.s3"
local storage = require "zever.storage"
local json = require "zever.json"
local process = require "spec.support.process"

local KEYS = { access_key = "AKIDEXAMPLE", secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" }

-- botocore's Authorization header for each case ({ method, host, path, headers, payload, time,
-- region }), computed by spec/support/sigv4_botocore.py.
local function botocore(cases)
  local input = os.tmpname()
  local f = assert(io.open(input, "w"))
  for _, c in ipairs(cases) do
    c.path_encoded = sigv4.encode(c.path, true)
    c.access_key, c.secret_key = KEYS.access_key, KEYS.secret_key
  end
  f:write(json.encode(cases))
  f:close()
  local r = process.run(process.PYTHON .. " spec/support/sigv4_botocore.py < " .. process.quote(input))
  os.remove(input)
  assert(r.code == 0, r.stderr)
  return json.decode(r.stdout)
end

describe("adapters.storage.sigv4", function()
  it("signs each request shape of the s3 adapter as botocore does", function()
    local t = 1440938160
    local cases = {
      { method = "PUT", path = "/media/docs/x.txt", payload = "hello world" },
      { method = "GET", path = "/media/photos/a b+c é.png", payload = "",
        headers = { range = "bytes=0-511" } },
      { method = "HEAD", path = "/media/k", payload = "" },
      { method = "DELETE", path = "/media/k", payload = "" },
      { method = "PUT", path = "/media/to/new key", payload = "",
        headers = { ["x-amz-copy-source"] = "/media/from/old%20key" } },
    }
    for _, c in ipairs(cases) do
      c.host, c.time, c.region = "127.0.0.1:9000", t, "eu-west-1"
    end
    local want = botocore(cases)
    for i, c in ipairs(cases) do
      local mine = sigv4.sign{ method = c.method, host = c.host, path = c.path,
        headers = c.headers, payload = c.payload, time = c.time, region = c.region,
        access_key = KEYS.access_key, secret_key = KEYS.secret_key }
      assert.are.equal(want[i], mine.authorization, c.method .. " " .. c.path)
      assert.is_nil(mine.authorization:find(KEYS.secret_key, 1, true))
    end
  end)
end)

-- A small S3 imitation: objects in a table per bucket, path-style, answering as S3 does for
-- the requests the adapter makes. Every request must carry the signature of its own shape
-- (recomputed with the checked signer at the adapter's fixed clock T).
local T = 1700000000

local function unescape(s)
  return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

local function imitation()
  local zever = require "zever"
  local app = zever.app()
  local objects, bad, seen = {}, 0, 0
  local function signed_ok(req, bucket, key)
    local headers = {}
    for _, name in ipairs({ "range", "x-amz-copy-source" }) do headers[name] = req:header(name) end
    local want = sigv4.sign{ method = req.method, host = req:header("host"),
      path = "/" .. bucket .. "/" .. key, headers = headers, payload = req.body or "", time = T,
      region = "us-east-1", access_key = KEYS.access_key, secret_key = KEYS.secret_key }
    return want.authorization == req:header("authorization")
  end
  local function handle(req, res)
    seen = seen + 1
    local bucket, key = req.path:match("^/([^/]+)/(.+)$")
    if not key then return res:status(404):send("") end
    key = unescape(key)
    if not signed_ok(req, bucket, key) then
      bad = bad + 1
      return res:status(403):send("SignatureDoesNotMatch")
    end
    local b = objects[bucket] or {}
    objects[bucket] = b
    if req.method == "PUT" then
      local src = req:header("x-amz-copy-source")
      if src then
        local sb, sk = src:match("^/([^/]+)/(.+)$")
        local from = objects[sb] and objects[sb][unescape(sk)]
        if not from then return res:status(404):send("NoSuchKey") end
        b[key] = from
      else
        b[key] = req.body or ""
      end
      return res:status(200):send("")
    end
    local data = b[key]
    if not data then return res:status(404):send("NoSuchKey") end
    if req.method == "DELETE" then
      b[key] = nil
      return res:status(204):send("")
    end
    res:header("last-modified", "Wed, 21 Oct 2015 07:28:00 GMT")
    local a, z = (req:header("range") or ""):match("^bytes=(%d+)%-(%d+)$")
    if a and req.method == "GET" then
      a, z = tonumber(a), tonumber(z)
      if a >= #data then return res:status(416):send("") end
      return res:status(206):send(data:sub(a + 1, z + 1))
    end
    return res:status(200):send(data)   -- HEAD: the server sends the head only
  end
  for _, m in ipairs({ "get", "put", "delete" }) do app[m](app, "/*path", handle) end
  return app, function() return bad, seen end
end

describe("adapters.storage.s3 against an S3 imitation", function()
  local testing = require "zever.testing"
  local srv, bad
  local seq = 0
  setup(function()
    local app
    app, bad = imitation()
    srv = testing.serve(app)
  end)
  teardown(function() srv:close() end)

  require("spec.conformance.storage")("s3 (imitation)", function(opts)
    -- Each suite row gets an empty bucket of its own.
    seq = seq + 1
    local impl = s3.new{ endpoint = "http://127.0.0.1:" .. srv.port, bucket = "b" .. seq,
      access_key = KEYS.access_key, secret_key = KEYS.secret_key, clock = function() return T end }
    return storage.wrap(impl, opts)
  end)

  it("sent only requests whose signature the imitation recomputed", function()
    -- Requests of every shape of its own (the suite's rows may run after this one).
    seq = seq + 1
    local s = storage.wrap(s3.new{ endpoint = "http://127.0.0.1:" .. srv.port, bucket = "b" .. seq,
      access_key = KEYS.access_key, secret_key = KEYS.secret_key, clock = function() return T end }, {})
    local _, before = bad()
    assert(s:put("dir/x.txt", "0123456789"))
    assert.are.equal("234", (s:get("dir/x.txt", { 2, 4 })))
    assert.is_true(s:move("dir/x.txt", "y.txt"))
    assert.is_true(s:delete("y.txt"))
    local failed, after = bad()
    assert.is_true(after - before >= 6, "the imitation saw " .. (after - before) .. " requests")
    assert.are.equal(0, failed)
    s:close()
  end)

  it("reports an endpoint that does not answer as unavailable, not as a missing object", function()
    -- A port nothing listens on: the connection is refused at once.
    local impl = s3.new{ endpoint = "http://127.0.0.1:" .. process.free_port(), bucket = "gone",
      access_key = KEYS.access_key, secret_key = KEYS.secret_key, clock = function() return T end,
      timeout = 5 }
    local s = storage.wrap(impl, {})
    local st, err = s:stat("k")
    assert.is_nil(st)
    assert.are.equal("unavailable", err.code)
    assert.are.equal("unavailable", select(2, s:get("k")).code)
    local app = require("zever").app()
    s:mount(app)
    local res = require("zever.testing").request(app, "GET", s:presign("GET", "k"))
    assert.are.equal(503, res.status)
    assert.are.same({ error = "unavailable" }, res:json())
    s:close()
  end)

  it("parses Last-Modified as Unix time", function()
    assert.are.equal(1445412480, s3.http_time("Wed, 21 Oct 2015 07:28:00 GMT"))
  end)
end)
