-- zever.template: golden rows for escaping, output and compile errors (file:line), then view
-- sets (partials, layouts, helpers, the cache) on real files, and res:render through an app,
-- in-process and over a real socket (curl).

local template = require "zever.template"
local errors = require "zever.errors"
local testing = require "zever.testing"
local fs = require "spec.support.files"

local function render(source, env, name)
  local fn = assert(template.compile(source, name or "t.etlua"))
  return fn(setmetatable(env or {}, { __index = _G }))
end

describe("zever.template", function()
  describe("escape", function()
    local rows = {
      { "plain text is unchanged", "hello world", "hello world" },
      { "all five specials", [[& < > " ']], "&amp; &lt; &gt; &quot; &#39;" },
      { "a tag", "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;" },
      { "an attribute break-out", [[" onmouseover="x]], "&quot; onmouseover=&quot;x" },
      { "a single-quoted break-out", "' onclick='x", "&#39; onclick=&#39;x" },
      { "an entity is escaped again", "&amp;", "&amp;amp;" },
      { "UTF-8 is unchanged", "Zoë ☃", "Zoë ☃" },
      { "NUL and control bytes pass", "a\0b\1", "a\0b\1" },
      { "nil is empty", nil, "" },
      { "a number is its text", 42.5, "42.5" },
      { "a small integer is its text", 7, "7" },
      { "zero is 0", 0, "0" },
      { "negative zero keeps its sign", -0.0, "-0" },
      { "the largest remembered integer", 4095, "4095" },
      { "an integer past the remembered ones", 4096, "4096" },
      { "a negative integer", -3, "-3" },
      { "a boolean is its text", false, "false" },
    }
    for _, row in ipairs(rows) do
      it(row[1], function() assert.are.equal(row[3], template.escape(row[2])) end)
    end

    it("escapes <%= %> and leaves <%- %> raw", function()
      assert.are.equal("&lt;b&gt;&amp;&#39; <b>&'",
        render("<%= v %> <%- v %>", { v = "<b>&'" }))
    end)
  end)

  describe("compile", function()
    local rows = {
      { "text only", "just text\n", {}, "just text\n" },
      { "an expression", "a<%= 1 + 2 %>b", {}, "a3b" },
      { "nil writes nothing", "[<%= missing %>][<%- missing %>]", {}, "[][]" },
      { "code and a loop", "<% for i = 1, 3 do %><%= i %>,<% end %>", {}, "1,2,3," },
      { "-%> drops the newline after the tag", "<% if true then -%>\nyes\n<% end -%>\nend", {},
        "yes\nend" },
      { "a field of the env", "<%= user.name %>", { user = { name = "ann" } }, "ann" },
      { "quotes and backslashes in text survive", [[a "q" \n \ %> b]], {}, [[a "q" \n \ %> b]] },
      { "an expression's first value only", "<%= ('x'):gsub('x', 'y') %>", {}, "y" },
      { "a string with <% in code", "<% local s = '<' .. '%' %><%= s %>", {}, "&lt;%" },
    }
    for _, row in ipairs(rows) do
      it(row[1], function()
        assert.are.equal(row[4], render(row[2], row[3]))
      end)
    end

    local bad = {
      { "an unclosed tag", "line 1\n<%= x", "bad.etlua:2: unclosed tag (want %> after <%)" },
      { "an empty expression", "a\nb\n<%=   %>", "bad.etlua:3: empty <%= %> tag" },
      { "a Lua syntax error on its line", "one\ntwo\n<% if then %>\n<% end %>",
        "bad.etlua:3: unexpected symbol near 'then'" },
      { "a bad expression", "a\n\n\n<%= x + %>", "bad.etlua:4: unexpected symbol near ')'" },
      { "a block left open", "a\n<% for i = 1, 2 do %>\n<%= i %>",
        "bad.etlua:3: a Lua block is not closed (a <% if/for/while/function %> without its " ..
        "<% end %>): unexpected symbol near ','" },
    }
    for _, row in ipairs(bad) do
      it("names file:line for " .. row[1], function()
        local fn, err = template.compile(row[2], "bad.etlua")
        assert.is_nil(fn)
        assert.is_true(errors.is(err, "invalid"))
        assert.are.equal(row[3], err.message)
        assert.are.equal("bad.etlua", err.file)
      end)
    end

    it("names file:line for an error while rendering", function()
      local fn = assert(template.compile("a\nb\n<%= user.name %>", "views/show.etlua"))
      local ok, err = pcall(fn, setmetatable({}, { __index = _G }))
      assert.is_false(ok)
      assert.matches("^views/show%.etlua:3: attempt to index local 'user'", err)
    end)

    it("raises on a source that is not a string", function()
      assert.has_error(function() template.compile(nil) end,
        "template.compile: source must be a string")
    end)

    -- A render makes no closure (FNEW is not compiled by LuaJIT): the render function and every
    -- function inside it hold no FNEW, unless the template's own code defines a function.
    local util, bit = require "jit.util", require "bit"
    local FNEW = bit.band(util.funcbc(loadstring("return function() end"), 1), 0xff)
    local function fnews(fn)
      local n, pc = 0, 1
      while true do
        local ins = util.funcbc(fn, pc)
        if ins == nil then break end
        if bit.band(ins, 0xff) == FNEW then n = n + 1 end
        pc = pc + 1
      end
      return n
    end

    it("renders without making a closure, reading each name once from env", function()
      local source = "<% for i = 1, #rows do local r = rows[i] %><%= r.id %>:<%= r.m %>;<% end %>"
      local fn = assert(template.compile(source, "rows.etlua"))
      assert.are.equal(0, fnews(fn))
      local reads = {}
      local env = setmetatable({}, { __index = function(_, k)
        reads[#reads + 1] = k
        return ({ rows = { { id = 1, m = "<a>" }, { id = 2, m = "b" } } })[k]
      end })
      assert.are.equal("1:&lt;a&gt;;2:b;", fn(env))
      assert.are.same({ "rows" }, reads)
      assert.are.equal("", fn({ rows = {} }))
    end)

    it("keeps globals a template assigns and functions it defines within one render", function()
      local source = "<% total = 0 function add(x) total = total + x end %>" ..
        "<% for _, v in ipairs(list) do add(v) end %><%= total %>"
      local fn = assert(template.compile(source, "sum.etlua"))
      assert.are.equal(1, fnews(fn)) -- the template's own function, made when it runs
      assert.are.equal("6", fn(setmetatable({ list = { 1, 2, 3 } }, { __index = _G })))
      assert.are.equal("3", fn(setmetatable({ list = { 3 } }, { __index = _G })))
      assert.is_nil(rawget(_G, "total"))
    end)

    it("keeps renders apart that interleave (a helper that yields) or raise", function()
      local fn = assert(template.compile("<%= a %>[<% wait() %>]<%- b %><% if boom then " ..
        "error('boom') end %>", "mix.etlua"))
      local function env(a, b, boom)
        return { a = a, b = b, boom = boom, wait = coroutine.yield, error = error }
      end
      local c1 = coroutine.wrap(function() return fn(env("<1>", "one")) end)
      local c2 = coroutine.wrap(function() return fn(env("&2", "two")) end)
      c1()
      c2()
      assert.are.equal("&amp;2[]two", c2())
      assert.are.equal("&lt;1&gt;[]one", c1())
      local c3 = coroutine.wrap(function() return fn(env("x", "y", true)) end)
      c3()
      assert.has_error(function() c3() end)
      local e = env(7, 8)
      e.wait = function() end
      assert.are.equal("7[]8", fn(e))
    end)

    it("still renders a template reading more names than a function has locals", function()
      local parts = {}
      for i = 1, 250 do parts[i] = "<%= v" .. i .. " %>" end
      local env = {}
      for i = 1, 250 do env["v" .. i] = i % 10 end
      local fn = assert(template.compile(table.concat(parts), "many.etlua"))
      local want = {}
      for i = 1, 250 do want[i] = tostring(i % 10) end
      assert.are.equal(table.concat(want), fn(env))
    end)
  end)

  describe("views", function()
    local dir
    before_each(function()
      dir = fs.tmpdir({
        ["index.etlua"] = "<h1><%= title %></h1>\n<% for _, u in ipairs(users) do -%>\n" ..
          "<%- render(\"row\", { user = u }) %>\n<% end -%>\n",
        ["row.etlua"] = "<li><%= user.name %> <%= shout(user.name) %></li>",
        ["layout.etlua"] = "<html><title><%= title %></title><%- content %></html>",
        ["broken.etlua"] = "ok\n<%= %>\n",
        ["fails.etlua"] = "ok\n<%= nothing.here %>\n",
      }, "zever-template")
    end)
    after_each(function() fs.rm_rf(dir) end)

    local function views(opts)
      opts = opts or {}
      opts.dir = dir
      local v = template.views(opts)
      v:helper("shout", function(s) return s:upper() end)
      return v
    end

    it("renders a template with partials and helpers, escaping what data holds", function()
      local html = views():render("index", { title = "Users & co",
        users = { { name = "ann" }, { name = "<bob>" } } })
      assert.are.equal("<h1>Users &amp; co</h1>\n<li>ann ANN</li>\n" ..
        "<li>&lt;bob&gt; &lt;BOB&gt;</li>\n", html)
    end)

    it("puts the view inside a layout that sees its data, and renders without one on demand",
      function()
        local v = views({ layout = "layout" })
        local html = v:render("row", { title = "T", user = { name = "x" } })
        assert.are.equal("<html><title>T</title><li>x X</li></html>", html)
        assert.are.equal("<li>x X</li>", v:render("row", { user = { name = "x" } }, { layout = false }))
      end)

    it("compiles a file once and reads it again only after clear", function()
      local v = views()
      assert.are.equal("<li>a A</li>", v:render("row", { user = { name = "a" } }))
      fs.write(dir .. "/row.etlua", "changed <%= user.name %>")
      assert.are.equal("<li>a A</li>", v:render("row", { user = { name = "a" } }))
      v:clear()
      assert.are.equal("changed a", v:render("row", { user = { name = "a" } }))
    end)

    it("raises with the file and line of a template that does not compile or fails", function()
      local v = views()
      local ok, err = pcall(v.render, v, "broken", {})
      assert.is_false(ok)
      assert.are.equal(dir .. "/broken.etlua:2: empty <%= %> tag", err.message)
      ok, err = pcall(v.render, v, "fails", {})
      assert.is_false(ok)
      assert.matches("fails%.etlua:2: attempt to index local 'nothing'", err)
    end)

    it("refuses a missing template and a name that leaves the folder", function()
      local v = views()
      assert.has_error(function() v:render("nope", {}) end,
        "views: no template nope (looked for " .. dir .. "/nope.etlua)")
      assert.has_error(function() v:render("../etc/passwd", {}) end,
        'views: bad template name "../etc/passwd"')
      assert.has_error(function() v:render("row", "not a table") end,
        "views:render: data must be a table")
    end)

    it("keeps a global a template assigns to its own render", function()
      fs.write(dir .. "/assigns.etlua", "<% leaked_by_template = (leaked_by_template or 0) + 1 %>" ..
        "<%= leaked_by_template %>")
      local v = views()
      assert.are.equal("1", v:render("assigns", {}))
      assert.are.equal("1", v:render("assigns", {}))
      assert.is_nil(rawget(_G, "leaked_by_template"))
    end)

    it("keeps two renders of one template apart (each has its own names)", function()
      local v = views()
      local inner
      v:helper("nested", function() inner = v:render("row", { user = { name = "in" } }) return "" end)
      fs.write(dir .. "/outer.etlua", "<%= user.name %><%- nested() %><%= user.name %>")
      assert.are.equal("outout", v:render("outer", { user = { name = "out" } }))
      assert.are.equal("<li>in IN</li>", inner)
    end)
  end)

  describe("res:render and app.views", function()
    local dir
    local APP = [[
local zever = require "zever"
local app = zever.app()
app:get("user", "/users/:id", function(req, res)
  return res:render("user", { id = req.params.id, name = req.query.name })
end)
app:get("/missing", function(req, res) return res:render("nope") end)
app:get("/created", function(req, res)
  return res:render("user", { id = "9", name = "n" }, { layout = false, status = 201 })
end)
return app
]]
    before_each(function()
      dir = fs.tmpdir({
        ["app.lua"] = APP,
        ["views/user.etlua"] = '<a href="<%= url_for("user", { id = id }) %>"><%= name %></a>',
        ["views/layout.etlua"] = "<body><%- content %></body>",
        ["zever.yaml"] = "http:\n  views: views\n",
      }, "zever-template-app")
    end)
    after_each(function() fs.rm_rf(dir) end)

    it("answers HTML from app.views with url_for, a 500 for a missing template", function()
      local t = testing.app(dir)
      local res = t:get("/users/7", { query = { name = "<Zoë>" } })
      assert.are.equal(200, res.status)
      assert.are.equal("text/html; charset=utf-8", res.headers["content-type"])
      assert.are.equal('<a href="/users/7">&lt;Zoë&gt;</a>', res.body)
      assert.are.equal(500, t:get("/missing").status)
      local created = t:get("/created")
      assert.are.equal(201, created.status)
      assert.are.equal('<a href="/users/9">n</a>', created.body)
      t:close()
    end)

    it("uses the layout the app sets, over a real socket", function()
      local t = testing.app(dir)
      t.app.views.layout = "layout"
      local srv = t:serve()
      local res = srv:get("/users/3?name=x")
      srv:close()
      t:close()
      assert.are.equal(200, res.status)
      assert.are.equal('<body><a href="/users/3">x</a></body>', res.body)
    end)

    it("finds views next to app.lua when zever.yaml does not name the folder", function()
      os.remove(dir .. "/zever.yaml")
      local t = testing.app(dir)
      assert.are.equal(dir .. "/views", t.app.views.dir)
      assert.are.equal('<a href="/users/1">a</a>', t:get("/users/1?name=a").body)
      t:close()
    end)
  end)
end)
