-- zever.redis: URL parsing (golden rows, no server), then the sync and async clients against a
-- real redis-server started on a free loopback port by spec.support.redis_server.

local redis = require "zever.redis"
local loop = require "zever.loop"
local sched = require "zever.sched"
local testing = require "zever.testing"
local sys = require "zever.sys"
local process = require "spec.support.process"
local files = require "spec.support.files"

describe("zever.redis url", function()
  -- { name, url, expected table | nil and the message }
  local rows = {
    { "host and port", "redis://127.0.0.1:6380",
      { host = "127.0.0.1", port = 6380, db = 0, username = "", password = "" } },
    { "the default port", "redis://cache.internal",
      { host = "cache.internal", port = 6379, db = 0, username = "", password = "" } },
    { "a database", "redis://127.0.0.1:6379/3",
      { host = "127.0.0.1", port = 6379, db = 3, username = "", password = "" } },
    { "a trailing slash", "redis://h:1/",
      { host = "h", port = 1, db = 0, username = "", password = "" } },
    { "a password", "redis://:hunter2@127.0.0.1:6379/0",
      { host = "127.0.0.1", port = 6379, db = 0, username = "", password = "hunter2" } },
    { "an ACL user", "redis://app:pw@h:7000/2",
      { host = "h", port = 7000, db = 2, username = "app", password = "pw" } },
    { "a percent-encoded password", "redis://:p%40ss%3Aw@h",
      { host = "h", port = 6379, db = 0, username = "", password = "p@ss:w" } },
    { "an IPv6 host", "redis://[::1]:6390/1",
      { host = "::1", port = 6390, db = 1, username = "", password = "" } },
    { "a password with @ inside", "redis://:a@b@h:1",
      { host = "h", port = 1, db = 0, username = "", password = "a@b" } },
    { "another scheme", "http://h:1", nil, "invalid redis url: the scheme must be redis://" },
    { "TLS", "rediss://h:1", nil, "invalid redis url: rediss:// (TLS) is not supported by this build" },
    { "no host", "redis://:1/0", nil, "invalid redis url: the host is missing" },
    { "port 0", "redis://h:0", nil, "invalid redis url: the port must be 1..65535" },
    { "port too big", "redis://h:65536", nil, "invalid redis url: the port must be 1..65535" },
    { "a letter in the port", "redis://h:6x", nil, "invalid redis url: the port must be 1..65535" },
    { "a word for the db", "redis://h:1/zero", nil, "invalid redis url: the database must be a number" },
    { "userinfo without a colon", "redis://secret@h", nil,
      "invalid redis url: the userinfo must be [user]:password" },
    { "a bad escape", "redis://:%zz@h", nil, "invalid redis url: the password is malformed or too long" },
    { "a space in the host", "redis://a b:1", nil,
      "invalid redis url: the host has a character that is not allowed" },
  }
  for _, row in ipairs(rows) do
    it("parses " .. row[1], function()
      local u, err = redis.parse_url(row[2])
      if row[3] then
        assert.same(row[3], u)
      else
        assert.is_nil(u)
        assert.equal("invalid", err.code)
        assert.equal(row[4], err.message)
      end
    end)
  end

  it("never puts the password into a parse error", function()
    local _, err = redis.parse_url("redis://:hunter2@h:99999")
    assert.is_nil(tostring(err):find("hunter2", 1, true))
  end)
end)

describe("zever.redis #redis", function()
  local srv = require("spec.support.redis_server").fixture()

  describe("sync client", function()
    it("sets and gets a value", function()
      local c = assert(redis.connect(srv.url, { sync = true }))
      assert.equal("OK", c:call("SET", "sync:k", "v"))
      assert.equal("v", c:call("GET", "sync:k"))
      c:close()
    end)

    it("maps nil, integers, arrays and nils inside arrays", function()
      local c = assert(redis.connect(srv.url, { sync = true }))
      c:call("DEL", "sync:n", "sync:l")
      assert.is_nil(c:call("GET", "sync:missing"))
      assert.equal(5, c:call("INCRBY", "sync:n", 5))
      assert.equal(3, c:call("RPUSH", "sync:l", "a", "b", "c"))
      assert.same({ "a", "b", "c" }, c:call("LRANGE", "sync:l", 0, -1))
      assert.same({ "5", redis.null }, c:call("MGET", "sync:n", "sync:missing"))
      c:close()
    end)

    it("returns integers beyond 2^53 as decimal strings", function()
      local c = assert(redis.connect(srv.url, { sync = true }))
      c:call("SET", "sync:big", "9007199254740993")
      assert.equal("9007199254740994", c:call("INCR", "sync:big"))
      assert.equal(9007199254740992, c:call("DECRBY", "sync:big", 2))
      c:close()
    end)

    it("returns nil and a redis error for an error reply", function()
      local c = assert(redis.connect(srv.url, { sync = true }))
      local v, err = c:call("NOSUCHCOMMAND")
      assert.is_nil(v)
      assert.equal("redis", err.code)
      assert.matches("^ERR unknown command", err.message)
      assert.matches("^redis: ERR", tostring(err))
      c:close()
    end)

    it("pipelines commands and keeps error replies in place", function()
      local c = assert(redis.connect(srv.url, { sync = true }))
      local r = assert(c:call_many({ { "SET", "sync:p", 1 }, { "INCR", "sync:p" }, { "BOGUS" },
        { "GET", "sync:p" } }))
      assert.equal("OK", r[1])
      assert.equal(2, r[2])
      assert.is_true(redis.is_error(r[3]))
      assert.equal("redis", r[3].code)
      assert.equal("2", r[4])
      c:close()
    end)

    it("fails to connect with unavailable", function()
      local c, err = redis.connect("redis://127.0.0.1:1/0", { sync = true })
      assert.is_nil(c)
      assert.equal("unavailable", err.code)
      assert.equal("127.0.0.1:1: Connection refused", err.message)
    end)

    it("returns closed after close", function()
      local c = assert(redis.connect(srv.url, { sync = true }))
      c:close()
      local v, err = c:call("PING")
      assert.is_nil(v)
      assert.equal("closed", err.code)
    end)

    it("raises on an argument that is not a string or number", function()
      local c = assert(redis.connect(srv.url, { sync = true }))
      assert.has_error(function() c:call("SET", "k", {}) end)
      assert.has_error(function() c:call(42) end)
      assert.equal("PONG", c:call("PING"))
      c:close()
    end)
  end)

  describe("async client", function()
    it("runs the loop until the reply outside a coroutine", function()
      local c = assert(redis.connect(srv.url))
      assert.equal("OK", c:call("SET", "async:k", "v"))
      assert.equal("v", c:call("GET", "async:k"))
      assert.is_nil(c:call("GET", "async:missing"))
      c:close()
    end)

    it("yields inside sched.spawn while another coroutine runs", function()
      local c = assert(redis.connect(srv.url))
      local order, got = {}, nil
      sched.spawn(function()
        order[#order + 1] = "call"
        got = c:call("ECHO", "hello")
        order[#order + 1] = "reply"
      end)
      sched.spawn(function() order[#order + 1] = "other" end)
      assert.same({ "call", "other" }, order)
      assert.is_true(testing.run_until(function() return got ~= nil end, 5))
      assert.equal("hello", got)
      assert.same({ "call", "other", "reply" }, order)
      c:close()
    end)

    it("serves many waiting coroutines in order", function()
      local c = assert(redis.connect(srv.url))
      c:call("DEL", "async:ctr")
      local seen = {}
      for i = 1, 50 do
        sched.spawn(function() seen[i] = c:call("INCR", "async:ctr") end)
      end
      assert.is_true(testing.run_until(function() return seen[50] ~= nil end, 5))
      for i = 1, 50 do assert.equal(i, seen[i]) end
      c:close()
    end)

    it("pipelines with pipeline(fn) and call_many", function()
      local c = assert(redis.connect(srv.url))
      local r = assert(c:pipeline(function(p)
        p:call("SET", "async:p", "1")
        p:call("INCR", "async:p")
        p:call("GET", "async:none")
        p:call("BOGUS")
      end))
      assert.equal("OK", r[1])
      assert.equal(2, r[2])
      assert.equal(redis.null, r[3])
      assert.is_true(redis.is_error(r[4]))
      local done
      sched.spawn(function() done = c:call_many({ { "GET", "async:p" }, { "PING" } }) end)
      assert.is_true(testing.run_until(function() return done ~= nil end, 5))
      assert.same({ "2", "PONG" }, done)
      c:close()
    end)

    it("wakes a waiting coroutine with closed when the client closes", function()
      local c = assert(redis.connect(srv.url))
      local v, err
      sched.spawn(function() v, err = c:call("BLPOP", "async:never", 5) end)
      c:close()
      assert.is_nil(v)
      assert.equal("closed", err.code)
      local v2, err2 = c:call("PING")
      assert.is_nil(v2)
      assert.equal("closed", err2.code)
    end)

    it("sends a command larger than the socket takes in one write", function()
      local c = assert(redis.connect(srv.url))
      local big = ("0123456789abcdef"):rep(1024 * 1024) -- 16 MiB: loopback takes less at once
      local got
      sched.spawn(function() got = c:call("ECHO", "before") end)
      assert.equal("OK", c:call("SET", "async:big", big))
      assert.equal("before", got)
      assert.equal(#big, c:call("STRLEN", "async:big"))
      assert.equal(big, c:call("GET", "async:big"))
      c:call("DEL", "async:big")
      c:close()
    end)

    -- hiredis asks for write readiness per command and re-adds read readiness per read; the
    -- client writes from a prepare handle and leaves the poll alone, so a command costs no
    -- epoll_ctl (before: six, two of them failing). Counted with strace, not timed.
    it("costs no epoll_ctl per command", function()
      if process.run("strace -o /dev/null true").code ~= 0 then
        pending("strace cannot trace here")
        return
      end
      local function epoll_ctls(n)
        local log = os.tmpname()
        -- LeakSanitizer cannot run under ptrace: `make asan`'s child runs without it.
        local r = process.run(("ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "
          .. "strace -f -e trace=epoll_ctl -o %s %s run %s %s %d"):format(
          log, process.quote(sys.exe()), "spec/fixtures/redis_gets.lua", process.quote(srv.url), n))
        assert.equal(0, r.code, r.stderr)
        local count = select(2, files.read(log):gsub("epoll_ctl%(", ""))
        os.remove(log)
        return count
      end
      local base, more = epoll_ctls(10), epoll_ctls(210)
      assert.is_true(more - base < 20, ("200 more GETs cost %d more epoll_ctl"):format(more - base))
    end)

    it("does not keep loop.run() going when idle", function()
      local c = assert(redis.connect(srv.url))
      assert.equal("PONG", c:call("PING"))
      loop.run() -- returns: nothing is pending
      c:close()
    end)
  end)

  describe("scripts", function()
    for _, mode in ipairs({ "sync", "async" }) do
      it("runs with EVALSHA and reloads after SCRIPT FLUSH (" .. mode .. ")", function()
        local c = assert(redis.connect(srv.url, { sync = mode == "sync" }))
        local s = c:script("return {KEYS[1], ARGV[1], redis.call('INCR', KEYS[1])}")
        c:call("DEL", "script:n")
        assert.same({ "script:n", "x", 1 }, s:call({ "script:n" }, { "x" }))
        local sha = s.sha
        assert.equal(40, #sha)
        assert.equal("OK", c:call("SCRIPT", "FLUSH"))
        assert.same({ "script:n", "y", 2 }, s:call({ "script:n" }, { "y" }))
        assert.equal(sha, s.sha)
        local v, err = c:script("return redis.error_reply('nope')"):call()
        assert.is_nil(v)
        assert.equal("redis", err.code)
        c:close()
      end)
    end
  end)

  describe("shared", function()
    it("returns the same client for the same target and closes it with the last user", function()
      local a = assert(redis.shared(srv.url))
      local b = assert(redis.shared(srv.url))
      local c = assert(redis.shared((srv.url:gsub("/0$", ""))))
      assert.equal(a, b)
      assert.equal(a, c)
      a:close()
      b:close()
      assert.equal("PONG", c:call("PING"))
      c:close()
      local _, err = c:call("PING")
      assert.equal("closed", err.code)
      local d = assert(redis.shared(srv.url))
      assert.not_equal(a, d)
      assert.equal("PONG", d:call("PING"))
      d:close()
    end)

    it("keeps separate clients per database", function()
      local a = assert(redis.shared(srv.url))
      local b = assert(redis.shared((srv.url:gsub("/0$", "/1"))))
      assert.not_equal(a, b)
      a:call("SET", "shared:db", "zero")
      b:call("SET", "shared:db", "one")
      assert.equal("zero", a:call("GET", "shared:db"))
      assert.equal("one", b:call("GET", "shared:db"))
      a:close()
      b:close()
    end)
  end)

  describe("connection loss", function()
    it("fails with unavailable while the server is down and recovers after a restart", function()
      local c = assert(redis.connect(srv.url, { backoff_min = 0.02, backoff_max = 0.2 }))
      assert.equal("PONG", c:call("PING"))
      local s = assert(redis.connect(srv.url, { sync = true }))
      assert.equal("PONG", s:call("PING"))
      srv:kill()
      local v, err = c:call("PING")
      assert.is_nil(v)
      assert.equal("unavailable", err.code)
      local v2, err2 = s:call("PING")
      assert.is_nil(v2)
      assert.equal("unavailable", err2.code)
      assert(srv:restart())
      local ok = false
      for _ = 1, 200 do
        if c:call("PING") == "PONG" then ok = true; break end
        sched.sleep(0.01)
      end
      assert.is_true(ok)
      assert.equal("PONG", s:call("PING"))
      assert.is_true(c:info().connects >= 2)
      c:close()
      s:close()
    end)

    it("recovers inside a coroutine too", function()
      local c = assert(redis.connect(srv.url, { backoff_min = 0.02, backoff_max = 0.2 }))
      assert.equal("PONG", c:call("PING"))
      srv:kill()
      local results = {}
      local done = false
      sched.spawn(function()
        results[1] = select(2, c:call("PING")).code
        assert(srv:restart())
        for _ = 1, 200 do
          if c:call("PING") == "PONG" then results[2] = "PONG"; break end
          sched.sleep(0.01)
        end
        done = true
      end)
      assert.is_true(testing.run_until(function() return done end, 10))
      assert.same({ "unavailable", "PONG" }, results)
      c:close()
    end)
  end)

  describe("password", function()
    local secure = require("spec.support.redis_server").fixture({ password = "hunter2" })

    it("sends AUTH from the url", function()
      local a = assert(redis.connect(secure.url))
      assert.equal("PONG", a:call("PING"))
      a:close()
      local s = assert(redis.connect(secure.url, { sync = true }))
      assert.equal("PONG", s:call("PING"))
      s:close()
    end)

    it("reports a wrong password without the password", function()
      local url = "redis://:wrong-pw@127.0.0.1:" .. secure.port .. "/0"
      local _, err = redis.connect(url, { sync = true })
      assert.equal("unavailable", err.code)
      assert.matches("AUTH failed: WRONGPASS", err.message)
      assert.is_nil(tostring(err):find("wrong-pw", 1, true))
      local a = assert(redis.connect(url))
      local v, aerr = a:call("PING")
      assert.is_nil(v)
      assert.equal("unavailable", aerr.code)
      assert.matches("AUTH failed: WRONGPASS", aerr.message)
      assert.is_nil(tostring(aerr):find("wrong-pw", 1, true))
      a:close()
    end)

    it("refuses commands without a password", function()
      local a = assert(redis.connect("redis://127.0.0.1:" .. secure.port .. "/0"))
      local v, err = a:call("GET", "x")
      assert.is_nil(v)
      assert.equal("redis", err.code)
      assert.matches("^NOAUTH", err.message)
      a:close()
    end)
  end)
end)
