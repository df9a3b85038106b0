local router = require "zever.router"

-- A router over rows of { method, pattern, id }.
local function build(routes)
  local r = router.new()
  for _, row in ipairs(routes) do r:add(row[1], row[2], row[3]) end
  return r
end

-- The table most rows below run against.
local TABLE = {
  { "GET", "/", 1 },
  { "GET", "/users", 2 },
  { "POST", "/users", 3 },
  { "GET", "/users/new", 4 },
  { "GET", "/users/:id", 5 },
  { "PUT", "/users/:id", 6 },
  { "DELETE", "/users/:id", 7 },
  { "GET", "/users/:id/posts/:post", 8 },
  { "GET", "/users/new/posts/latest", 9 },
  { "GET", "/files/*path", 10 },
  { "GET", "/files/special", 11 },
  { "POST", "/files/upload", 12 },
  { "GET", "/dir/", 13 },
  { "OPTIONS", "/cors", 14 },
  { "GET", "/cors", 15 },
  { "HEAD", "/ping", 16 },
  { "GET", "/ping", 17 },
  { "PROPFIND", "/dav/*resource", 18 },
  { "GET", "/v1/items:batchGet", 19 },
  { "POST", "/v1/items/:id", 20 },
  { "GET", "/v1/items/first", 21 },
  { "GET", "/caf%C3%A9", 22 },
}

describe("zever.router", function()
  describe("match", function()
    local r = build(TABLE)

    -- { title, method, path, id, params (nil: none) }
    local hits = {
      { "matches the root", "GET", "/", 1 },
      { "matches a static route", "GET", "/users", 2 },
      { "picks the handler of the request's method", "POST", "/users", 3 },
      { "prefers a static segment to a parameter", "GET", "/users/new", 4 },
      { "fills a parameter", "GET", "/users/42", 5, { id = "42" } },
      { "fills a parameter for another method", "DELETE", "/users/42", 7, { id = "42" } },
      { "fills two parameters", "GET", "/users/7/posts/hello", 8, { id = "7", post = "hello" } },
      { "backtracks to the parameter when the static branch fails deeper",
        "GET", "/users/new/posts/1", 8, { id = "new", post = "1" } },
      { "takes the deeper static route when it matches all the way",
        "GET", "/users/new/posts/latest", 9 },
      { "falls through to a parameter route of the request's method when the static one lacks it",
        "PUT", "/users/new", 6, { id = "new" } },
      { "fills a splat with the rest of the path", "GET", "/files/a/b/c.txt", 10,
        { path = "a/b/c.txt" } },
      { "fills a splat with one segment", "GET", "/files/a", 10, { path = "a" } },
      { "fills a splat with the empty string after a trailing slash", "GET", "/files/", 10,
        { path = "" } },
      { "prefers a static route to a splat", "GET", "/files/special", 11 },
      { "backtracks to the splat when a static prefix is not a whole match",
        "GET", "/files/specialty", 10, { path = "specialty" } },
      { "backtracks to the splat below a static segment", "GET", "/files/special/x", 10,
        { path = "special/x" } },
      { "backtracks to the splat for a method the static route lacks",
        "GET", "/files/upload", 10, { path = "upload" } },
      { "matches a route that ends with a slash", "GET", "/dir/", 13 },
      { "uses an explicit OPTIONS route", "OPTIONS", "/cors", 14 },
      { "lets HEAD fall back to GET", "HEAD", "/users/9", 5, { id = "9" } },
      { "prefers an explicit HEAD route to GET", "HEAD", "/ping", 16 },
      { "supports an extension method", "PROPFIND", "/dav/a/b", 18, { resource = "a/b" } },
      { "treats a colon inside a segment as a literal", "GET", "/v1/items:batchGet", 19 },
      { "matches a parameter that starts with a colon", "POST", "/v1/items/:x", 20, { id = ":x" } },
      { "matches static bytes as sent, still percent-encoded", "GET", "/caf%C3%A9", 22 },
    }
    for _, row in ipairs(hits) do
      it(row[1], function()
        local id, params = r:match(row[2], row[3])
        assert.are.equal(row[4], id)
        assert.are.same(row[5] or {}, params)
      end)
    end

    -- { title, path, params }: percent-decoding of parameter values.
    local decoded = {
      { "decodes an escaped space", "/users/a%20b", { id = "a b" } },
      { "keeps an escaped slash inside one parameter", "/users/a%2Fb", { id = "a/b" } },
      { "decodes lower- and upper-case hex digits", "/users/%c3%A9", { id = "\195\169" } },
      { "keeps an invalid escape literally", "/users/100%zz", { id = "100%zz" } },
      { "keeps a truncated escape literally", "/users/50%", { id = "50%" } },
      { "keeps a one-digit escape literally", "/users/50%4", { id = "50%4" } },
      { "does not turn a plus into a space", "/users/a+b", { id = "a+b" } },
      { "decodes a NUL byte", "/users/a%00b", { id = "a\0b" } },
      { "decodes each escape once", "/users/%2541", { id = "%41" } },
      { "decodes a splat", "/files/a%2Fb/c%20d", { path = "a/b/c d" } },
    }
    for _, row in ipairs(decoded) do
      it(row[1], function()
        local id, params = r:match("GET", row[2])
        assert.is_number(id)
        assert.are.same(row[3], params)
      end)
    end

    it("decodes parameter values longer than the stack scratch", function()
      local raw = string.rep("ab%20", 200) .. "%4" .. string.rep("x%41", 100) .. "%"
      local want = string.rep("ab ", 200) .. "%4" .. string.rep("xA", 100) .. "%"
      local _, params = r:match("GET", "/users/" .. raw)
      assert.are.equal(want, params.id)
    end)

    -- { title, method, path, status, extra }
    local misses = {
      { "returns 404 for an unknown path", "GET", "/nope", 404 },
      { "returns 404 for an empty parameter segment", "POST", "/v1/items/", 404 },
      { "returns 404 for a path without a leading slash", "GET", "users", 404 },
      { "returns 404 for the empty path", "GET", "", 404 },
      { "returns 405 with the allowed methods when only another method matches",
        "PATCH", "/users/1", 405, "DELETE, GET, HEAD, OPTIONS, PUT" },
      { "returns 405 listing the methods of every route that takes the path",
        "PATCH", "/users/new", 405, "DELETE, GET, HEAD, OPTIONS, PUT" },
      { "returns 405 without HEAD when no route has GET", "GET", "/dav/x", 405,
        "OPTIONS, PROPFIND" },
      { "returns 405 for a method the router has never seen", "BREW", "/users", 405,
        "GET, HEAD, OPTIONS, POST" },
      { "returns 405 rather than a redirect when the path itself matches another method",
        "DELETE", "/users", 405, "GET, HEAD, OPTIONS, POST" },
      { "answers OPTIONS automatically with the allowed methods", "OPTIONS", "/users/1", 204,
        "DELETE, GET, HEAD, OPTIONS, PUT" },
      { "answers OPTIONS automatically for a static route", "OPTIONS", "/", 204,
        "GET, HEAD, OPTIONS" },
      { "redirects GET to the path without its trailing slash with 301", "GET", "/users/", 301,
        "/users" },
      { "redirects HEAD with 301", "HEAD", "/users/1/", 301, "/users/1" },
      { "redirects GET to the path with a trailing slash with 301", "GET", "/dir", 301, "/dir/" },
      { "redirects other methods with 308", "PUT", "/users/1/", 308, "/users/1" },
      { "redirects to a splat route that takes the empty rest", "PROPFIND", "/dav", 308, "/dav/" },
      { "redirects OPTIONS when the twin answers OPTIONS", "OPTIONS", "/users/1/", 308,
        "/users/1" },
      { "does not redirect when the twin lacks the method", "POST", "/dir", 404 },
      { "does not redirect to a path that starts with two slashes", "GET", "//dir", 404 },
      { "returns 405 for the root when only GET takes it", "POST", "/", 405, "GET, HEAD, OPTIONS" },
    }
    for _, row in ipairs(misses) do
      it(row[1], function()
        local id, status, extra = r:match(row[2], row[3])
        assert.is_nil(id)
        assert.are.equal(row[4], status)
        assert.are.equal(row[5], extra)
      end)
    end

    it("keeps the query string out of the location: the caller appends it", function()
      local _, status, location = r:match("GET", "/users/")
      assert.are.equal(301, status)
      assert.are.equal("/users", location)
    end)

    it("gives a fresh params table to every hit with parameters", function()
      local _, a = r:match("GET", "/users/1")
      local _, b = r:match("GET", "/users/1")
      assert.are_not.equal(a, b)
      a.id = "changed"
      assert.are.equal("1", b.id)
    end)

    it("shares one read-only empty table for hits without parameters", function()
      local _, a = r:match("GET", "/users")
      local _, b = r:match("GET", "/")
      assert.are.equal(a, b)
      assert.are.equal(router.empty_params, a)
      assert.is_nil(next(a))
      assert.has_error(function() a.x = 1 end)
      assert.is_nil(next(a))
    end)

    it("allows sixteen parameters", function()
      local names, values, path = {}, {}, ""
      for i = 1, 15 do
        names[#names + 1] = "/:p" .. i
        path = path .. "/" .. i
        values["p" .. i] = tostring(i)
      end
      local rr = router.new()
      rr:add("GET", table.concat(names) .. "/*rest", 1)
      values.rest = "x/y"
      local id, params = rr:match("GET", path .. "/x/y")
      assert.are.equal(1, id)
      assert.are.same(values, params)
    end)

    it("treats methods as case-sensitive", function()
      local rr = build({ { "GET", "/a", 1 } })
      local id, status = rr:match("get", "/a")
      assert.is_nil(id)
      assert.are.equal(405, status)
    end)

    it("accepts any integer id, negative ones too", function()
      local rr = build({ { "GET", "/a", -7 }, { "GET", "/b", 2147483647 } })
      assert.are.equal(-7, (rr:match("GET", "/a")))
      assert.are.equal(2147483647, (rr:match("GET", "/b")))
    end)
  end)

  describe("add", function()
    -- { title, routes added first, method, pattern, exact message }
    local errors = {
      { "rejects a different parameter name at the same position", { { "GET", "/a/:x" } },
        "GET", "/a/:y", 'route "/a/:y" conflicts with "/a/:x": parameter :y vs :x' },
      { "rejects a different parameter name for another method too", { { "GET", "/a/:x/b" } },
        "POST", "/a/:y", 'route "/a/:y" conflicts with "/a/:x/b": parameter :y vs :x' },
      { "rejects a different splat name at the same position", { { "GET", "/f/*path" } },
        "GET", "/f/*rest", 'route "/f/*rest" conflicts with "/f/*path": splat *rest vs *path' },
      { "rejects the same method and pattern twice", { { "GET", "/a/:x" } },
        "GET", "/a/:x", 'route GET "/a/:x" is already registered (id 1)' },
      { "rejects a splat that is not the last segment", {},
        "GET", "/a/*rest/b", 'route "/a/*rest/b": splat *rest must be the last segment' },
      { "rejects an empty parameter name", {}, "GET", "/a/:/b",
        'route "/a/:/b": empty parameter name' },
      { "rejects an empty splat name", {}, "GET", "/a/*", 'route "/a/*": empty splat name' },
      { "rejects a pattern without a leading slash", {}, "GET", "a/b",
        [[route "a/b": a pattern starts with '/']] },
      { "rejects an empty pattern", {}, "GET", "", [[route "": a pattern starts with '/']] },
      { "rejects a parameter name with punctuation", {}, "GET", "/a/:id.json",
        [[route "/a/:id.json": parameter name "id.json" may only hold letters, digits and '_']] },
      { "rejects the same parameter name twice in one pattern", {}, "GET", "/a/:id/b/:id",
        'route "/a/:id/b/:id": parameter name "id" appears twice' },
      { "rejects a query string in a pattern", {}, "GET", "/a?b=1",
        [[route "/a?b=1": '?' is not allowed in a pattern (it is not part of a path)]] },
      { "rejects a space in a pattern", {}, "GET", "/a b",
        'route "/a b": byte 0x20 at offset 2 is not allowed in a pattern' },
      { "rejects a method that is not a token", {}, "GE T", "/a",
        'method "GE T" is not an HTTP method token' },
      { "rejects an empty method", {}, "", "/a",
        'method "" is not an HTTP method token (1 to 32 bytes)' },
      { "rejects more than sixteen parameters", {}, "GET",
        "/:a/:b/:c/:d/:e/:f/:g/:h/:i/:j/:k/:l/:m/:n/:o/:p/:q",
        'route "/:a/:b/:c/:d/:e/:f/:g/:h/:i/:j/:k/:l/:m/:n/:o/:p/:q": more than 16 parameters' },
    }
    for _, row in ipairs(errors) do
      it(row[1], function()
        local r = router.new()
        for i, route in ipairs(row[2]) do r:add(route[1], route[2], i) end
        local ok, err = pcall(r.add, r, row[3], row[4], 99)
        assert.is_false(ok)
        assert.are.equal(row[5], (err:gsub("^[^:]*:%d+: ", "")))
      end)
    end

    it("blames the line that called add", function()
      local r = build({ { "GET", "/a/:x", 1 } })
      local ok, err = pcall(function() r:add("GET", "/a/:y", 2) end)
      assert.is_false(ok)
      assert.matches("router_spec.lua:%d+: route", err)
    end)

    it("leaves the router working after a failed add", function()
      local r = build({ { "GET", "/a/:x/b", 1 } })
      assert.has_error(function() r:add("GET", "/a/:y/c", 2) end)
      assert.has_error(function() r:add("GET", "/abc/:z/*q/w", 3) end)
      local id, params = r:match("GET", "/a/1/b")
      assert.are.equal(1, id)
      assert.are.same({ x = "1" }, params)
      assert.are.equal(404, select(2, r:match("GET", "/a/1/c")))
      assert.are.equal(1, #r:routes())
    end)

    it("allows a parameter and a splat at the same position", function()
      local r = build({ { "GET", "/a/:x", 1 }, { "GET", "/a/*rest", 2 } })
      assert.are.equal(1, (r:match("GET", "/a/b")))
      assert.are.equal(2, (r:match("GET", "/a/b/c")))
    end)

    it("allows the same parameter name at the same position in two routes", function()
      local r = build({ { "GET", "/a/:x", 1 }, { "GET", "/a/:x/b", 2 }, { "POST", "/a/:x", 3 } })
      assert.are.equal(2, (r:match("GET", "/a/1/b")))
      assert.are.equal(3, (r:match("POST", "/a/1")))
    end)

    it("knows at most 32 methods", function()
      local r = router.new()
      for i = 1, 25 do r:add("X" .. i, "/a", i) end
      local ok, err = pcall(r.add, r, "X26", "/a", 26)
      assert.is_false(ok)
      assert.matches('method "X26": a router knows at most 32 methods', err, 1, true)
    end)

    -- { title, arguments to add }
    local misuse = {
      { "raises when the method is not a string", { 1, "/a", 1 } },
      { "raises when the pattern is not a string", { "GET", nil, 1 } },
      { "raises when the id is missing", { "GET", "/a" } },
      { "raises when the id is not an integer", { "GET", "/a", 1.5 } },
      { "raises when the id does not fit in 32 bits", { "GET", "/a", 2 ^ 31 } },
      { "raises when the id is not a number", { "GET", "/a", "1" .. "x" } },
    }
    for _, row in ipairs(misuse) do
      it(row[1], function()
        local r = router.new()
        local args = row[2]
        assert.has_error(function() r:add(args[1], args[2], args[3]) end)
      end)
    end

    it("raises when called on something that is not a router", function()
      local r = router.new()
      assert.has_error(function() r.add({}, "GET", "/a", 1) end)
      assert.has_error(function() r.match("x", "GET", "/a") end)
    end)

    it("raises when match gets a path that is not a string", function()
      local r = router.new()
      assert.has_error(function() r:match("GET", 42) end)
      assert.has_error(function() r:match(nil, "/a") end)
    end)
  end)

  describe("allow", function()
    local r = build(TABLE)

    it("lists the methods that some route accepts for a path", function()
      assert.are.equal("DELETE, GET, HEAD, OPTIONS, PUT", r:allow("/users/5"))
      assert.are.equal("GET, HEAD, OPTIONS, POST", r:allow("/users"))
    end)

    it("returns nil when no route takes the path", function()
      assert.is_nil(r:allow("/nope"))
    end)
  end)

  describe("routes", function()
    it("lists the routes in registration order", function()
      local r = build({ { "GET", "/b/:x", 2 }, { "POST", "/a", 1 }, { "BREW", "/pot", 3 } })
      assert.are.same({
        { method = "GET", pattern = "/b/:x", id = 2 },
        { method = "POST", pattern = "/a", id = 1 },
        { method = "BREW", pattern = "/pot", id = 3 },
      }, r:routes())
      assert.are.equal("zever.router (3 routes)", tostring(r))
    end)
  end)

  describe("against a naive matcher", function()
    -- The reference: split on '/', compare segment by segment; among the routes that match and
    -- take the method, the winner has the smallest kinds sequence (static < param < splat).
    local STATIC, PARAM, SPLAT = 0, 1, 2
    local METHODS = { "GET", "HEAD", "POST", "PUT", "OPTIONS", "BREW" }
    local WORDS = { "a", "b", "ab", "abc", "x:y", "", "a%2Fb", "abcdefghij", "abcdefghik",
      "c", "d", "e", "f", "g", "h", "i" }
    local PATH_WORDS = { "a", "b", "ab", "abc", "", "x:y", "zz", "a%2Fb", ":x", "abcdefghijk",
      "abcdefghij", "abcdefghik", "c", "h" }

    local function split(path)
      local segs = {}
      for seg in (path:sub(2) .. "/"):gmatch("([^/]*)/") do segs[#segs + 1] = seg end
      return segs
    end

    local function decode(s)
      return (s:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
    end

    local function ref_match(route, segs)
      local params = {}
      for i, seg in ipairs(route.segs) do
        if seg.kind == SPLAT then
          if i > #segs then return nil end
          params[seg.text] = decode(table.concat(segs, "/", i))
          return params
        end
        local s = segs[i]
        if s == nil then return nil end
        if seg.kind == STATIC and seg.text ~= s then return nil end
        if seg.kind == PARAM then
          if s == "" then return nil end
          params[seg.text] = decode(s)
        end
      end
      return #segs == #route.segs and params or nil
    end

    local function before(a, b)
      for i = 1, math.min(#a.segs, #b.segs) do
        if a.segs[i].kind ~= b.segs[i].kind then return a.segs[i].kind < b.segs[i].kind end
      end
      return false
    end

    local function takes(rm, m) return rm == m or (m == "HEAD" and rm == "GET") end

    local function allow_of(seen)
      if seen.GET then seen.HEAD = true end
      seen.OPTIONS = true
      local list = {}
      for m in pairs(seen) do list[#list + 1] = m end
      table.sort(list)
      return table.concat(list, ", ")
    end

    local function ref_lookup(routes, m, path)
      local segs, best, seen = split(path), nil, nil
      for _, route in ipairs(routes) do
        if ref_match(route, segs) then
          seen = seen or {}
          seen[route.method] = true
          if takes(route.method, m) and (not best or before(route, best)) then best = route end
        end
      end
      if best then
        local use
        for _, route in ipairs(routes) do
          if route.pattern == best.pattern and takes(route.method, m) then
            if not use or route.method == m then use = route end
          end
        end
        return use.id, ref_match(use, segs)
      end
      if seen then return nil, m == "OPTIONS" and 204 or 405, allow_of(seen) end
      return nil, 404
    end

    local function ref(routes, m, path)
      local id, a, b = ref_lookup(routes, m, path)
      if id or a ~= 404 then return id, a, b end
      local twin = path:sub(-1) == "/" and path:sub(1, -2) or path .. "/"
      if twin == "" or twin:find("^//") then return nil, 404 end
      local tid, tstatus = ref_lookup(routes, m, twin)
      if tid or (tstatus == 204) then
        return nil, (m == "GET" or m == "HEAD") and 301 or 308, twin
      end
      return nil, 404
    end

    local seed = 12345
    local function rnd(n)
      seed = (seed * 1103515245 + 12345) % 2147483648
      return math.floor(seed / 65536) % n + 1
    end

    local function random_route(id)
      local route = { method = METHODS[rnd(#METHODS)], segs = {}, id = id }
      local n, parts, names = rnd(4), {}, {}
      for i = 1, n do
        local k = rnd(10)
        local seg
        if k <= 6 then
          seg = { kind = STATIC, text = WORDS[rnd(#WORDS)] }
          parts[i] = seg.text
        elseif k <= 9 or i < n then
          seg = { kind = PARAM, text = rnd(2) == 1 and "x" or "y" }
          parts[i] = ":" .. seg.text
        else
          seg = { kind = SPLAT, text = "s" }
          parts[i] = "*s"
        end
        if seg.kind ~= STATIC then
          if names[seg.text] then return nil end -- the same name twice: skip this one
          names[seg.text] = true
        end
        route.segs[i] = seg
      end
      route.pattern = "/" .. table.concat(parts, "/")
      return route
    end

    it("agrees on random tables and paths", function()
      for _ = 1, 300 do
        local r, routes = router.new(), {}
        for i = 1, rnd(20) do
          local route = random_route(i)
          if route and pcall(r.add, r, route.method, route.pattern, route.id) then
            routes[#routes + 1] = route
          end
        end
        for _ = 1, 40 do
          local words = {}
          for i = 1, rnd(5) do words[i] = PATH_WORDS[rnd(#PATH_WORDS)] end
          local path = "/" .. table.concat(words, "/")
          local m = METHODS[rnd(#METHODS)]
          local want = { ref(routes, m, path) }
          local got = { r:match(m, path) }
          if got[1] and got[2] == router.empty_params then got[2] = {} end
          assert.are.same(want, got, m .. " " .. path)
        end
      end
    end)
  end)

  describe("the GitHub API table", function()
    local file = os.getenv("ZV_GITHUB_ROUTES") or "../shared/data/github-api-routes.txt"
    local f = io.open(file)
    local run = f and it or pending

    run("matches each of its routes with the parameters filled in", function()
      local r, rows = router.new(), {}
      for line in f:lines() do
        local method, pattern = line:match("^(%u+) (%S+)$")
        if method then
          rows[#rows + 1] = { method, pattern }
          r:add(method, pattern, #rows)
        end
      end
      f:close()
      assert.are.equal(203, #rows)
      for i, row in ipairs(rows) do
        local want = {}
        local path = row[2]:gsub("/:([%w_]+)", function(name)
          want[name] = name .. "-v"
          return "/" .. name .. "-v"
        end)
        local id, params = r:match(row[1], path)
        assert.are.equal(i, id, row[1] .. " " .. path)
        assert.are.same(want, params)
      end
    end)
  end)
end)
