-- The paths shaped for LuaJIT's compiler (router match through dispatch, the response writer's
-- Lua part, db exec/first with values, JSON encode of a small flat object, duration parse, an
-- idle worker's poll) compile to traces without NYI aborts. Each row runs a loop from a flushed
-- trace cache with LuaJIT's trace events attached (spec/support/traces.lua), as
-- lua-resty-core's tests assert the trace and the absence of NYI. The checks read trace events only, so load cannot break
-- them; what the paths cost per call is measured by the benchmarks (BENCHMARKS.md).
--
-- respond itself (lua/zever/server.lua) needs a live C request and runs only inside a server;
-- its Lua part here is the response writer (zever.response: new, apply, finish), which every
-- request runs before respond.
local traces = require "spec.support.traces"
local zever = require "zever"
local response = require "zever.response"
local json = require "zever.json"
local duration = require "zever.duration"
local zdb = require "zever.db"
local request = require "zever.request"

local N = 2000 -- LuaJIT's hot loop threshold is 56 iterations: a wide margin

-- Asserts that the path compiled to traces without an NYI abort, and, when `whole`, that nothing
-- on it stopped a trace at a classic C call (a "stitch"). Whether LuaJIT closes the spec's own
-- loop into one trace or first compiles the path's functions as traces of their own depends on
-- their hot counters, which the specs before this one moved (CI shuffles: with seed 911844813
-- app.lua's functions were hot already and the loop never became a root trace, with no NYI in
-- sight), so the loop trace is reported when present, not required.
local function assert_compiles(t, whole)
  local all = traces.describe(t)
  assert.are.same({}, traces.nyi(t))
  assert.is_true(#t.stops > 0, "nothing compiled: " .. all)
  if whole then assert.is_false(traces.stitched(t), "a classic C call split it: " .. all) end
end

describe("hot paths", function()
  describe("router match", function()
    local app = zever.app()
    app:get("/hello", function() return "hi" end)
    app:get("/users/:id", function(req) return req.params.id end)
    app:get("/repos/:owner/:repo", function(req) return req.params.repo end)

    for _, path in ipairs({ "/hello", "/users/42", "/repos/zever/core" }) do
      it("compiles dispatch of " .. path .. " without an NYI abort or a stitch", function()
        local sink = 0
        local t = traces.run(function()
          for _ = 1, N do
            local res = app:dispatch("GET", path, "", nil)
            sink = sink + res.code
          end
        end)
        assert.are.equal(200 * N, sink)
        assert_compiles(t, true)
      end)
    end
  end)

  describe("dispatch through middleware", function()
    -- Two app-level middlewares, a group's and the handler: a chain of four steps. When every
    -- step ran through one function (run_chain), it was on the stack once a step: it got hot
    -- before the loop, closed as a trace of its own with an "up-recursion" link, the loop's
    -- trace stopped there, and that trace's exits fell back to the interpreter (aborts "NYI:
    -- return to lower frame"). Each position now has its own copy, so no trace may recurse. The
    -- hot counters are reset first (fresh): which function gets hot first is then decided by
    -- this loop's calls, not by the specs that ran before.
    local app = zever.app()
    app:use(function(_, _, next) return next() end)
    app:use(function(_, res, next)
      local r = next()
      res.code = 201
      return r
    end)
    app:group("/api", function(r)
      r:use(function(_, _, next) return next() end)
      r:get("/users/:id", function(req) return req.params.id end)
    end)

    it("compiles without a recursive trace, an interpreter fallback or an NYI abort", function()
      local sink = 0
      local t = traces.run(function()
        for _ = 1, N do
          local res = app:dispatch("GET", "/api/users/42", nil, nil)
          sink = sink + res.code + #res.body
        end
      end, { fresh = true })
      assert.are.equal(203 * N, sink)
      assert.are.same({}, traces.linked(t, "up-recursion"), traces.describe(t))
      assert.are.same({}, traces.linked(t, "interpreter"), traces.describe(t))
      assert_compiles(t, true)
    end)
  end)

  describe("the response writer", function()
    it("compiles new, apply and finish of a text answer without an NYI abort or a stitch", function()
      -- Whether LuaJIT closes the spec's loop into one trace, or compiles the three functions
      -- as traces of their own first, depends on their hot counters, which earlier specs in a
      -- shuffled order have moved (a seed where new's function trace aborted with "leaving loop
      -- in root trace", not an NYI, left no loop trace). What must hold in any order: traces
      -- compile, no NYI aborts them and no classic C call splits them.
      local sink = 0
      local t = traces.run(function()
        for i = 1, N do
          local res = response.finish(response.apply(response.new(), "hello " .. (i % 10)))
          sink = sink + #res.body
        end
      end)
      assert.are.equal(7 * N, sink)
      assert.are.same({}, traces.nyi(t))
      assert.is_true(#t.stops > 0, traces.describe(t))
      assert.is_false(traces.stitched(t), "a classic C call split it: " .. traces.describe(t))
    end)

    it("compiles res:header and res:add_header without an NYI abort or a stitch", function()
      -- A middleware that sets a header on every response (security headers, a request id):
      -- the name and value checks are table lookups and plain string.find, which LuaJIT
      -- compiles; a pattern's string.find stitched the trace at each call (BENCHMARKS.md
      -- "Session 12").
      local sink = 0
      local t = traces.run(function()
        for i = 1, N do
          local res = response.new()
          res:header("X-Frame-Options", "DENY"):header("X-Request-Id", "r" .. (i % 10))
          res:add_header("Vary", "Accept")
          res = response.finish(response.apply(res, "hello"))
          sink = sink + #res.headers
        end
      end)
      assert.are.equal(8 * N, sink)
      assert.are.same({}, traces.nyi(t))
      assert.is_true(#t.stops > 0, traces.describe(t))
      assert.is_false(traces.stitched(t), "a classic C call split it: " .. traces.describe(t))
    end)

    it("compiles a JSON answer of one field without an NYI abort", function()
      -- zever.json writes a small object in Lua (its fast path), never calling the C writer.
      -- Whether the loop closes into one trace depends on LuaJIT's hot counters (an ASan run in
      -- one order aborted it with "loop unroll limit reached", not an NYI): not asserted.
      local sink = 0
      local t = traces.run(function()
        for i = 1, N do
          local res = response.finish(response.apply(response.new(), { id = i % 10 }))
          sink = sink + #res.body
        end
      end)
      assert.are.equal(8 * N, sink)
      assert.are.same({}, traces.nyi(t))
      assert.is_true(#t.stops > 0, traces.describe(t))
    end)
  end)

  describe("db", function()
    local db

    before_each(function()
      db = assert(zdb.open("sqlite::memory:"))
      assert(db:exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)"))
    end)

    after_each(function()
      db:close()
    end)

    it("compiles exec with values without an NYI abort", function()
      -- exec writes through the classic C API, so its loop is stitched at that call.
      local t = traces.run(function()
        for i = 1, N do assert(db:exec("INSERT INTO t (id, name) VALUES (?, ?)", i, "n")) end
      end)
      assert.are.equal(N, db:first("SELECT count(*) AS n FROM t").n)
      assert.are.same({}, traces.nyi(t))
      assert.is_true(#t.stops > 0, traces.describe(t))
    end)

    it("compiles first with values without an NYI abort or a stitch (the FFI read path)", function()
      assert(db:exec("INSERT INTO t (id, name) VALUES (1, 'one'), (2, 'two')"))
      local sink = 0
      local t = traces.run(function()
        for i = 1, N do sink = sink + #db:first("SELECT id, name FROM t WHERE id = ?", i % 2 + 1).name end
      end)
      assert.are.equal(3 * N, sink)
      assert_compiles(t, true)
    end)
  end)

  describe("db prepared query on a handle", function()
    it("compiles on(handle) for a handle it has not seen without an NYI abort", function()
      -- TFB /updates runs `set:on(tx)` in every request; the object on() keeps per handle is
      -- weak, so after a collection on() makes it again, inside the request's trace. It made a
      -- closure there (FNEW, which LuaJIT 2.1 does not compile: "NYI: bytecode 50"). A new
      -- handle per iteration makes every call take that path.
      local db = assert(zdb.open("sqlite::memory:"))
      local set = db:update("t"):set("n", db.param()):where("id", db.param()):prepare()
      local made = 0
      local t = traces.run(function()
        for _ = 1, N do
          local h = { conn = db.conn, dialect = db.dialect }
          if set:on(h)._db == h then made = made + 1 end
        end
      end, { eager = true })
      db:close()
      assert.are.equal(N, made)
      local bad = {}
      for _, a in ipairs(t.aborts) do
        if a.reason:find("NYI", 1, true) and (a.where or ""):find("prepared.lua", 1, true) then
          bad[#bad + 1] = a.reason .. " at " .. tostring(a.where)
        end
      end
      assert.are.same({}, bad)
      assert.is_true(#t.stops > 0, traces.describe(t))
    end)
  end)

  -- The line of run_tx's return in zever.db (found in the source, so the checks below follow
  -- edits of db.lua): the one return into db:transaction's pcall frame, which a trace that
  -- started inside run_tx cannot compile ("NYI: return to lower frame", traces.WARM_UP).
  local function run_tx_return_line()
    local path = package.searchpath("zever.db", package.path)
    local n = 0
    for line in io.lines(path) do
      n = n + 1
      if line:find("^  return n, r1, r2, r3$") then return n end
    end
  end

  describe("db transaction on SQLite", function()
    it("compiles a transaction around an exec without an NYI abort in zever.db", function()
      -- No wait inside: the loop's trace enters pcall's frame itself, so the return into it
      -- compiles. Only when run_tx got hot before this loop (other specs ran transactions
      -- first: the order of the suite) may a trace start inside run_tx and abort at its return
      -- into pcall while it warms up; that one abort is allowed, as in the PostgreSQL row.
      local db = assert(zdb.open("sqlite::memory:"))
      assert(db:exec("CREATE TABLE hot (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)"))
      assert(db:exec("INSERT INTO hot VALUES (1, 0)"))
      local body = function(tx) return tx:exec("UPDATE hot SET n = n + 1 WHERE id = ?", 1) end
      local changed = 0
      local t = traces.run(function()
        for _ = 1, N do changed = changed + db:transaction(body).changes end
      end, { fresh = true })
      assert.are.equal(N, changed)
      assert.are.equal(N, db:first("SELECT n FROM hot WHERE id = 1").n)
      db:close()
      local line = run_tx_return_line()
      local allowed = line and "db.lua:" .. line
      local bad = {}
      for _, a in ipairs(t.aborts) do
        if a.reason:find("NYI", 1, true) and not (a.reason:find(traces.WARM_UP, 1, true) and
            a.where == allowed) and (a.where or ""):find("db.lua", 1, true) then
          bad[#bad + 1] = a.reason .. " at " .. tostring(a.where)
        end
      end
      assert.are.same({}, bad)
      assert.is_true(#t.stops > 0, traces.describe(t))
    end)
  end)

  describe("db transaction on PostgreSQL #pg", function()
    -- A transaction's statement and its COMMIT wait on the loop: LuaJIT resumes each in a trace
    -- that starts inside the adapter, below db:transaction's pcall frame. Before session 13 that
    -- trace had to return into the pcall frame ("NYI: return to lower frame" at db.lua's
    -- exec_result) and read finish's varargs ("NYI: bytecode 71"), so the front-end ran
    -- interpreted. Now the commit is issued inside pcall (run_tx) and a stitch ends the trace
    -- after the commit's wait: the one return into pcall left is run_tx's last line, which no
    -- trace can compile (a pcall frame below the trace's start). Every other NYI abort fails.
    local pg_server = require "spec.support.pg_server"
    local sched = require "zever.sched"
    local loop = require "zever.loop"
    local fx = pg_server.fixture("hotpath_tx")

    it("compiles the statement's and the commit's resumes without an NYI abort in zever.db", function()
      local db = assert(zdb.open(fx.dsn, { pool_size = 1 }))
      db:exec("CREATE TABLE hot (id integer PRIMARY KEY, n integer NOT NULL)")
      db:exec("INSERT INTO hot VALUES (1, 0)")
      local body = function(tx) return tx:exec("UPDATE hot SET n = n + 1 WHERE id = ?", 1) end
      local changed, done, failure = 0, false, nil
      local t = traces.run(function()
        sched.spawn(function()
          local ok, err = pcall(function()
            for _ = 1, N do changed = changed + db:transaction(body).changes end
          end)
          failure = not ok and err or nil
          done = true
        end)
        while not done do loop.run("once") end
      end, { fresh = true })
      assert.is_nil(failure)
      assert.are.equal(N, changed)
      assert.are.equal(N, db:first("SELECT n FROM hot WHERE id = 1").n)
      db:close()
      local line = run_tx_return_line() -- nil on a db.lua without run_tx: nothing is allowed
      local allowed = line and "db.lua:" .. line
      local bad = {}
      for _, a in ipairs(t.aborts) do
        if a.reason:find("NYI", 1, true) and not (a.reason:find(traces.WARM_UP, 1, true) and
            a.where == allowed) and (a.where or ""):find("db.lua", 1, true) then
          bad[#bad + 1] = a.reason .. " at " .. tostring(a.where) .. " (trace from " ..
            tostring(a.at) .. ")"
        end
      end
      assert.are.same({}, bad)
      assert.are.same({}, traces.nyi(t))
      assert.is_true(#t.stops > 0, traces.describe(t))
    end)
  end)

  describe("json.encode", function()
    it("compiles a one-field object without an NYI abort", function()
      -- The small-object fast path (see the response writer's row on why no whole loop is
      -- asserted).
      local sink = 0
      local t = traces.run(function()
        for i = 1, N do sink = sink + #json.encode({ id = i % 10 }) end
      end)
      assert.are.equal(8 * N, sink)
      assert.are.same({}, traces.nyi(t))
      assert.is_true(#t.stops > 0, traces.describe(t))
    end)

    it("compiles a small flat object without an NYI abort or a stitch", function()
      -- Up to 8 fields are written in Lua (the small-object path: next() and a string.buffer,
      -- both compiled), never calling the C writer.
      local sink = 0
      local t = traces.run(function()
        for i = 1, N do sink = sink + #json.encode({ id = i % 10, name = "x", ok = true }) end
      end)
      assert.are.equal(29 * N, sink) -- {"id":1,"name":"x","ok":true}
      assert_compiles(t, true)
    end)

    it("compiles a TFB World row without an NYI abort or a stitch", function()
      local sink = 0
      local t = traces.run(function()
        for i = 1, N do sink = sink + #json.encode({ id = 1000 + i % 10, randomNumber = 42 }) end
      end)
      assert.are.equal(29 * N, sink) -- {"id":1001,"randomNumber":42}
      assert_compiles(t, true)
    end)
  end)

  describe("constructors that end by setting a metatable", function()
    -- response.new, request.new and json.array run once a request, often from code that is not
    -- compiled at the time (after a handler's loop, whose trace cannot return past it). Ending in
    -- `return setmetatable(t, mt)`, a tail call of a fast function with a side effect, a trace
    -- that started in one of them could not return to its caller (LuaJIT: "leaving loop in root
    -- trace"), so they ran in the interpreter: on the old code this row saw only those aborts.
    -- Each is called four times an iteration (no inner loop, whose counter would fire first), so
    -- its hot counter fires before the loop's does.
    it("compile as function traces that return to their caller", function()
      local n, new, req, arr = 0, response.new, request.new, json.array
      local t = traces.run(function()
        for _ = 1, 300 do
          n = n + new().code + new().code + new().code + new().code
          n = n + #req("GET", "/", nil, {}).path + #req("GET", "/", nil, {}).path
            + #req("GET", "/", nil, {}).path + #req("GET", "/", nil, {}).path
          n = n + #arr({ 1 }) + #arr({ 1 }) + #arr({ 1 }) + #arr({ 1 })
        end
      end, { fresh = true })
      assert.are.equal(300 * 4 * 202, n)
      local all = traces.describe(t)
      for _, file in ipairs({ "response.lua", "request.lua", "json.lua" }) do
        for _, a in ipairs(t.aborts) do
          assert.is_falsy(a.at and a.at:find(file, 1, true), "aborted: " .. all)
        end
      end
      for _, file in ipairs({ "response.lua", "request.lua", "json.lua" }) do
        local found = false
        for _, st in ipairs(t.stops) do
          if st.link == "return" and st.at and st.at:find(file, 1, true) then found = true end
        end
        assert.is_true(found, "no function trace in " .. file .. ": " .. all)
      end
    end)
  end)

  describe("the query string", function()
    it("parses a one-pair query without an NYI abort or a stitch", function()
      -- req.query of /queries?queries=20: plain finds and subs (gmatch and gsub are NYI).
      local sink = 0
      local t = traces.run(function()
        for _ = 1, N do sink = sink + #request.parse_query("queries=20").queries end
      end)
      assert.are.equal(2 * N, sink)
      assert_compiles(t, true)
    end)
  end)

  describe("duration.parse", function()
    it("compiles without an NYI abort or a stitch", function()
      local sink = 0
      local t = traces.run(function()
        for _ = 1, N do sink = sink + duration.parse("1h30m") end
      end)
      assert.are.equal(5400 * N, sink)
      assert_compiles(t, true)
    end)
  end)

  describe("an idle worker's poll on the memory queue", function()
    it("compiles without an NYI abort or a stitch (the FFI pop)", function()
      local jobs, worker = require "zever.jobs", require "zever.worker"
      local queue, jq = require "zever.queue", require "adapters.jobs.queue"
      local q = queue.new{ name = "hotpath:poll" }
      local w = worker.new(jobs.wrap(jq.new(q), {}), { poll_max = 1 })
      local sink = 0
      local t = traces.run(function()
        for _ = 1, N do sink = sink + w:poll() end
      end)
      q:close()
      -- The delays: 0, then 1 ms, 2 ms ... 512 ms, then the 1 s cap for every other poll.
      local want = (N - 11) + 0.001 * (2 ^ 10 - 1)
      assert.is_true(math.abs(sink - want) < 1e-6, sink .. " ~= " .. want)
      assert_compiles(t, true)
    end)
  end)

  describe("the checker", function()
    it("sees an NYI abort when a loop creates a closure", function()
      -- LuaJIT 2.1 does not compile FNEW (a new closure): the loop's trace aborts with NYI.
      -- Eager: with the default threshold, whether the loop is attempted at all within N
      -- iterations depends on hot counters earlier specs moved (CI seed 1028468517 compiled only
      -- the closure's function, and the loop was never attempted).
      local t = traces.run(function()
        local n = 0
        for i = 1, N do
          local f = function() return i end
          n = n + f()
        end
        return n
      end, { eager = true })
      assert.is_true(#traces.nyi(t) > 0, traces.describe(t))
    end)

    it("sees a stitch when a loop calls a classic C function", function()
      -- The classic duration backend calls the binding through the Lua C API (lua_CFunction).
      local parse = duration.with_backend("classic").parse
      local t = traces.run(function()
        local n = 0
        for _ = 1, N do n = n + parse("1h30m") end
        return n
      end, { eager = true })
      assert.is_true(traces.stitched(t), traces.describe(t))
    end)
  end)
end)
