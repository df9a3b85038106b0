-- zever.middleware.csrf: the synchronizer token over a session, through a real client (curl
-- with a cookie jar): header, urlencoded and multipart form field, wrong and foreign tokens,
-- Origin checks, masking, logout, exemptions.

local testing = require "zever.testing"
local hs = require "spec.support.http_script"
local json = require "zever.json"

describe("zever.middleware.csrf", function()
  local zever = require "zever"
  local csrf = zever.middleware.csrf
  local app, srv, jar, jar2

  before_each(function()
    app = zever.app()
    app:use(zever.middleware.session{ name = "csrf-" .. math.random(1e9) })
    app:use(csrf{ trusted_origins = { "https://app.example.com" },
      skip = function(req) return req.path == "/webhook" end })
    app:get("/form", function(req) return { csrf = csrf.token(req) } end)
    app:post("/transfer", function() return { ok = true } end)
    app:post("/webhook", function() return { ok = true } end)
    app:post("/upload", function(req) return { ok = true, form = (req:form()) } end, { stream_body = true })
    app:post("/logout", function(req) req.session:destroy(); return { ok = true } end)
    srv = testing.serve(app)
    jar, jar2 = os.tmpname(), os.tmpname()
  end)
  after_each(function()
    srv:close()
    app:close()
    os.remove(jar)
    os.remove(jar2)
  end)

  local function curl(args, j)
    local out = hs.curl(("-D - -b %s -c %s %s"):format(j or jar, j or jar, args))
    local head, body = out:match("^(.-\r\n\r\n)(.*)$")
    return tonumber(head:match("^HTTP/1.1 (%d+)")), body ~= "" and json.decode(body) or nil
  end
  local function token(j) return select(2, curl(srv:url("/form"), j)).csrf end
  local function post(path, extra, j) return curl("-X POST " .. (extra or "") .. " " .. srv:url(path), j) end

  it("lets safe methods through and refuses a POST without a token", function()
    assert.equal(200, (curl(srv:url("/form"))))
    local status, body = post("/transfer")
    assert.equal(403, status)
    assert.same({ error = "csrf", message = "missing or invalid CSRF token" }, body)
  end)

  it("accepts the token in the header and in an urlencoded form field", function()
    local t = token()
    assert.equal(200, (post("/transfer", "-H 'X-CSRF-Token: " .. t .. "'")))
    assert.equal(200, (post("/transfer", "--data-urlencode '_csrf=" .. t .. "' --data 'amount=5'")))
  end)

  it("accepts the token in a multipart form's field (a form with a file input), not in a file", function()
    local t = token()
    local up = os.tmpname()
    local f = assert(io.open(up, "wb"))
    f:write("name=\"_csrf\"\r\n\r\n" .. t .. "\r\n") -- a file holding what looks like the field
    f:close()
    -- curl -F sends multipart/form-data; the field may come before or after the file.
    assert.equal(200, (post("/transfer", "-F '_csrf=" .. t .. "' -F 'doc=@" .. up .. "'")))
    assert.equal(200, (post("/transfer", "-F 'doc=@" .. up .. "' -F '_csrf=" .. t .. "'")))
    assert.equal(403, (post("/transfer", "-F 'doc=@" .. up .. "' -F 'amount=5'")))
    -- The token sent as a file part does not count.
    local tf = os.tmpname()
    f = assert(io.open(tf, "wb"))
    f:write(t)
    f:close()
    assert.equal(403, (post("/transfer", "-F '_csrf=@" .. tf .. "'")))
    assert.equal(403, (post("/transfer", "-F '_csrf=wrong' -F 'doc=@" .. up .. "'")))
    -- A stream_body route whose body is still arriving is its handler's to read (req.body
    -- raises there): the field is not read (a 403, not a 500), the header is.
    local big = os.tmpname()
    f = assert(io.open(big, "wb"))
    f:write(string.rep("x", 4 * 1024 * 1024))
    f:close()
    assert.equal(403, (post("/upload", "-H 'Expect:' -F '_csrf=" .. t .. "' -F 'doc=@" .. big .. "'")))
    local status, body = post("/upload", "-H 'Expect:' -H 'X-CSRF-Token: " .. t .. "' -F 'a=1' -F 'doc=@"
      .. big .. "'")
    assert.equal(200, status)
    assert.same({ ok = true, form = { a = "1" } }, body)
    os.remove(big)
    os.remove(up)
    os.remove(tf)
  end)

  it("answers 403, never a 500, for multipart bodies cut and shuffled at random", function()
    -- In process: the scanner of multipart bodies must not raise, whatever the client sends.
    local pieces = { "--b", "\r\n", "\r\n\r\n", 'Content-Disposition: form-data; name="_csrf"',
      '; filename="x"', "--", "tok", "b", '"', "name=", "" }
    local rng = 4242
    local function rand(n) -- a small LCG: the same bodies in every run
      rng = (rng * 1103515245 + 12345) % 2147483648
      return rng % n + 1
    end
    for _ = 1, 500 do
      local parts = {}
      for i = 1, rand(16) do parts[i] = pieces[rand(#pieces)] end
      local res = testing.request(app, "POST", "/transfer", { body = table.concat(parts),
        headers = { ["Content-Type"] = ({ "multipart/form-data; boundary=b",
          'multipart/form-data; boundary="b"', "multipart/form-data" })[rand(3)] } })
      assert.equal(403, res.status, table.concat(parts))
    end
  end)

  it("masks the token differently in every response, each one valid", function()
    local a, b = token(), token()
    assert.not_equal(a, b)
    assert.equal(200, (post("/transfer", "-H 'X-CSRF-Token: " .. a .. "'")))
    assert.equal(200, (post("/transfer", "-H 'X-CSRF-Token: " .. b .. "'")))
  end)

  it("refuses a wrong token and a token of another session", function()
    local mine = token()
    local theirs = token(jar2)
    local forged = mine:sub(1, -2) .. (mine:sub(-1) == "A" and "B" or "A")
    for _, t in ipairs({ theirs, forged, "x", ("A"):rep(86), "" }) do
      assert.equal(403, (post("/transfer", "-H 'X-CSRF-Token: " .. t .. "'")), t)
    end
  end)

  it("refuses a cross-site Origin even with a valid token, and accepts same-site and trusted", function()
    local t = token()
    local h = "-H 'X-CSRF-Token: " .. t .. "' "
    local status, body = post("/transfer", h .. "-H 'Origin: https://evil.example'")
    assert.equal(403, status)
    assert.equal("cross-origin request refused", body.message)
    assert.equal(403, (post("/transfer", h .. "-H 'Origin: null'")))
    assert.equal(200, (post("/transfer", h .. "-H 'Origin: http://127.0.0.1:" .. srv.port .. "'")))
    assert.equal(200, (post("/transfer", h .. "-H 'Origin: https://app.example.com'")))
  end)

  it("drops the token on logout", function()
    local t = token()
    assert.equal(200, (post("/logout", "-H 'X-CSRF-Token: " .. t .. "'")))
    assert.equal(403, (post("/transfer", "-H 'X-CSRF-Token: " .. t .. "'")))
  end)

  it("exempts what skip says", function()
    assert.equal(200, (post("/webhook")))
  end)

  it("raises without the session middleware, and on bad options", function()
    local bare = zever.app()
    bare:use(csrf{})
    bare:post("/x", function() return "x" end)
    local res = testing.request(bare, "POST", "/x", { headers = { ["x-csrf-token"] = "t" } })
    assert.equal(500, res.status)
    assert.has_error(function() csrf{ trusted_origins = { "app.example.com" } } end)
    assert.has_error(function() csrf{ skip = true } end)
  end)
end)
