-- Content negotiation: req:accepts, req:accepts_language, req:accepts_encoding and req:is over
-- zever.accept's LPeg grammars; golden rows, then one pass through a real socket.

local zever = require "zever"
local testing = require "zever.testing"
local json = require "zever.json"
local accept = require "zever.accept"

-- Runs fn(req) for a request with the given headers; returns its result (JSON round trip).
local function with(headers, fn)
  local app = zever.app()
  app:post("/", function(req) return { v = fn(req) == nil and json.null or fn(req) } end)
  local r = testing.request(app, "POST", "/", { headers = headers, body = "x" })
  local v = json.decode(r.body).v
  if v == json.null then return nil end
  return v
end

describe("content negotiation", function()
  describe("Accept grammar", function()
    local rows = {
      { "one type", "text/html", { { "text", "html", 1000 } } },
      { "q-values and params", "text/html;level=1;q=0.5, application/json",
        { { "text", "html", 500 }, { "application", "json", 1000 } } },
      { "case and white space", " TEXT/Html ; Q=0.25 ,\t*/*", { { "text", "html", 250 }, { "*", "*", 1000 } } },
      { "a malformed entry is skipped", "text/html, bogus, ;q=1, a/b;q=2, image/png",
        { { "text", "html", 1000 }, { "image", "png", 1000 } } },
      { "q with three decimals", "a/b;q=0.001, c/d;q=1.000", { { "a", "b", 1 }, { "c", "d", 1000 } } },
      { "extensions after q are ignored", "a/b;q=0.5;ext=1", { { "a", "b", 500 } } },
      { "empty elements", ",,a/b,,", { { "a", "b", 1000 } } },
      { "an empty header", "", {} },
    }
    for _, row in ipairs(rows) do
      it("parses " .. row[1], function()
        local got = {}
        for i, e in ipairs(accept.media(row[2])) do got[i] = { e.type, e.subtype, e.q } end
        assert.same(row[3], got)
      end)
    end
  end)

  describe("req:accepts", function()
    local rows = {
      { "the preferred offer", "text/html, application/json;q=0.9", { "json", "html" }, "html" },
      { "a wildcard subtype", "text/*", { "json", "html" }, "html" },
      { "*/* with the first offer", "*/*", { "json", "html" }, "json" },
      { "the more specific range", "text/*;q=0.1, text/html;q=0.8, */*;q=0.5", { "text", "html" }, "html" },
      { "q=0 refusing", "application/json;q=0, */*", { "json" }, nil },
      { "nothing acceptable", "image/png", { "json", "html" }, nil },
      { "a full media type offer", "application/vnd.api+json", { "json", "application/vnd.api+json" },
        "application/vnd.api+json" },
      { "header order on equal q", "application/json, text/html", { "html", "json" }, "json" },
      { "no Accept header: the first offer", nil, { "html", "json" }, "html" },
      { "a list argument", "text/html", { { "json", "html" } }, "html" },
    }
    for _, row in ipairs(rows) do
      it("picks " .. row[1], function()
        local offers = row[3]
        assert.equal(row[4], with({ Accept = row[2] }, function(req) return req:accepts(unpack(offers)) end))
      end)
    end

    it("lists the accepted types best first without arguments", function()
      assert.same({ "text/html", "application/xml", "*/*" }, with(
        { Accept = "*/*;q=0.1, application/xml;q=0.9, image/png;q=0, text/html" },
        function(req) return req:accepts() end))
    end)
  end)

  describe("req:accepts_language", function()
    local rows = {
      { "a prefix range", "en", { "fr", "en-US" }, "en-US" },
      { "q-values", "fr;q=0.5, de", { "fr", "de" }, "de" },
      { "the longer match", "en;q=0.2, en-GB;q=0.9", { "en-US", "en-GB" }, "en-GB" },
      { "a wildcard", "da, *;q=0.1", { "fr" }, "fr" },
      { "no prefix inside a subtag", "en-US", { "en" }, nil },
      { "case-insensitive tags", "EN-us", { "en-US" }, "en-US" },
      { "no header: the first offer", nil, { "fr", "en" }, "fr" },
    }
    for _, row in ipairs(rows) do
      it("picks " .. row[1], function()
        assert.equal(row[4], with({ ["Accept-Language"] = row[2] },
          function(req) return req:accepts_language(unpack(row[3])) end))
      end)
    end
  end)

  describe("req:accepts_encoding", function()
    local rows = {
      { "the best coding", "gzip;q=0.5, br", { "gzip", "br", "identity" }, "br" },
      { "identity when nothing else fits", "compress", { "gzip", "identity" }, "identity" },
      { "identity refused", "gzip, identity;q=0", { "identity" }, nil },
      { "a wildcard refusing all", "*;q=0", { "gzip", "identity" }, nil },
      { "a wildcard", "*", { "br", "gzip" }, "br" },
      { "no header: identity only", nil, { "gzip", "identity" }, "identity" },
    }
    for _, row in ipairs(rows) do
      it("picks " .. row[1], function()
        assert.equal(row[4], with({ ["Accept-Encoding"] = row[2] },
          function(req) return req:accepts_encoding(unpack(row[3])) end))
      end)
    end
  end)

  describe("req:is", function()
    local rows = {
      { "json", "application/json; charset=utf-8", { "json" }, "json" },
      { "a +json suffix", "application/problem+json", { "html", "json" }, "json" },
      { "a wildcard", "text/csv", { "text/*" }, "text/*" },
      { "multipart", "multipart/form-data; boundary=x", { "multipart" }, "multipart" },
      { "another type", "text/html", { "json" }, false },
      { "a malformed type", "nonsense", { "json" }, false },
    }
    for _, row in ipairs(rows) do
      it("answers " .. row[1], function()
        assert.equal(row[4], with({ ["Content-Type"] = row[2] },
          function(req) return req:is(unpack(row[3])) end))
      end)
    end

    it("answers nil without a Content-Type", function()
      local app = zever.app()
      app:get("/", function(req) return tostring(req:is("json")) end)
      assert.equal("nil", testing.request(app, "GET", "/").body)
    end)
  end)

  it("negotiates through a real socket", function()
    local app = zever.app()
    app:get("/", function(req, res)
      local t = req:accepts("json", "html")
      if t == "html" then return res:header("Content-Type", "text/html"):send("<p>hi</p>") end
      if t == "json" then return { hi = true } end
      return res:status(406):json({ error = "not_acceptable" })
    end)
    local srv = testing.serve(app)
    local html = srv:get("/", { headers = { Accept = "text/html,application/xhtml+xml,*/*;q=0.8" } })
    local js = srv:get("/", { headers = { Accept = "application/json" } })
    local none = srv:get("/", { headers = { Accept = "image/png" } })
    srv:close()
    assert.equal("<p>hi</p>", html.body)
    assert.equal('{"hi":true}', js.body)
    assert.equal(406, none.status)
  end)

  it("raises when an offer is not a string", function()
    local app = zever.app()
    app:get("/", function(req) return req:accepts(42) end)
    assert.equal(500, testing.request(app, "GET", "/").status)
  end)
end)
