-- Streamed responses and server-sent events (zever.stream through zever.server and zever.http)
-- against real sockets: curl and the scripted raw client (spec/support/http_client.py) read
-- what an app served on this state's loop writes. Time only bounds how long a spec waits.

local zever = require "zever"
local server = require "zever.server"
local stream = require "zever.stream"
local testing = require "zever.testing"
local hs = require "spec.support.http_script"

local run_until = testing.run_until
local client, client_bg, get, curl = hs.client, hs.client_bg, hs.get, hs.curl

-- An app with a log captured in lines, served on port 0; returns srv, port, app, lines.
local servers = {}
local function serve(build, limits)
  local app = zever.app()
  local lines = {}
  app.log = require("zever.log").new({ out = { write = function(_, l) lines[#lines + 1] = l end },
    level = "debug" })
  build(app)
  local srv = assert(server.listen(app, { host = "127.0.0.1", port = 0, limits = limits }))
  servers[#servers + 1] = srv
  return srv, srv:port(), app, lines
end

local function close_all()
  for i = #servers, 1, -1 do
    servers[i]:close()
    servers[i] = nil
  end
  require("zever.loop").run("nowait")
end

-- The body of a raw HTTP/1.1 response with chunked framing, decoded; and whether the last
-- chunk came.
local function dechunk(raw)
  local pos, out = raw:match("\r\n\r\n()"), {}
  while pos do
    local size, at = raw:match("^(%x+)\r\n()", pos)
    if not size then return table.concat(out), false end
    size = tonumber(size, 16)
    if size == 0 then return table.concat(out), true end
    out[#out + 1] = raw:sub(at, at + size - 1)
    pos = at + size + 2
  end
  return table.concat(out), false
end

describe("zever.stream", function()
  after_each(close_all)

  describe("res:write", function()
    it("sends a chunked body whose chunks are the writes, then the last chunk", function()
      local _, port = serve(function(app)
        app:get("/c", function(_, res)
          res:status(201):header("X-A", "b")
          for i = 1, 3 do assert(res:write("part " .. i .. "\n")) end
          return res:finish()
        end)
      end)
      local out = curl(("-i --raw http://127.0.0.1:%d/c"):format(port))
      assert.matches("^HTTP/1.1 201 Created\r\n", out)
      assert.matches("\r\nTransfer%-Encoding: chunked\r\n", out)
      assert.matches("\r\nX%-A: b\r\n", out)
      assert.matches("\r\nContent%-Type: text/plain; charset=utf%-8\r\n", out)
      assert.matches("\r\n\r\n7\r\npart 1\n\r\n7\r\npart 2\n\r\n7\r\npart 3\n\r\n0\r\n\r\n$", out)
    end)

    it("finishes a stream whose handler returned without res:finish, keeping the connection",
      function()
        local _, port = serve(function(app)
          app:get("/c", function(_, res) res:write("a") res:write("b") end)
        end)
        local out = client(port, { get("/c"), "read:0.5", get("/c"), "read:0.5" })
        local first, second = out:match("^%[timeout%](.-)%[timeout%](.*)$")
        assert.is_truthy(first, out)
        assert.are.same({ "ab", true }, { dechunk(first) })
        assert.are.same({ "ab", true }, { dechunk(second) })
      end)

    it("uses the handler's Content-Length instead of chunks", function()
      local _, port = serve(function(app)
        app:get("/n", function(_, res)
          res:header("Content-Length", 10)
          res:write("01234")
          res:write("56789")
        end)
      end)
      local out = client(port, { get("/n"), "read:0.5", get("/n"), "read:0.5" })
      local first = out:match("^%[timeout%](.-)%[timeout%]")
      assert.is_truthy(first, out)
      assert.matches("\r\nContent%-Length: 10\r\n", first)
      assert.is_nil(first:find("Transfer-Encoding", 1, true))
      assert.matches("\r\n\r\n0123456789$", first)
      assert.matches("\r\n\r\n0123456789$", out:match("%[timeout%].-(%[timeout%].*)$"))
    end)

    it("closes the connection when the handler writes less than its Content-Length", function()
      local _, port = serve(function(app)
        app:get("/short", function(_, res)
          res:header("Content-Length", 10)
          res:write("01234")
        end)
      end)
      local out = client(port, { get("/short"), "read:5" })
      assert.matches("^%[eof%]HTTP/1.1 200 OK\r\n", out)
      assert.matches("\r\n\r\n01234$", out)
    end)

    it("raises on a write past the Content-Length and closes the connection", function()
      local _, port, _, lines = serve(function(app)
        app:get("/long", function(_, res)
          res:header("Content-Length", 3)
          res:write("0123")
        end)
      end)
      local out = client(port, { get("/long"), "read:5" })
      assert.matches("^%[eof%]", out)
      assert.is_nil(out:find("0123", 1, true))
      assert.matches("more than the Content%-Length", table.concat(lines))
    end)

    it("sends a close-delimited body to an HTTP/1.0 client", function()
      local _, port = serve(function(app)
        app:get("/c", function(_, res) res:write("x") res:write("y") end)
      end)
      local out = client(port, { "send:GET /c HTTP/1.0\\r\\n\\r\\n", "read:5" })
      assert.matches("^%[eof%]HTTP/1.1 200 OK\r\n", out)
      assert.matches("\r\nConnection: close\r\n", out)
      assert.matches("\r\n\r\nxy$", out)
    end)

    it("closes the connection without the last chunk when the handler fails midway", function()
      local _, port, _, lines = serve(function(app)
        app:get("/fail", function(_, res)
          res:write("begun")
          error("boom")
        end)
      end)
      local out = client(port, { get("/fail"), "read:5" })
      assert.matches("^%[eof%]HTTP/1.1 200 OK\r\n", out)
      assert.are.same({ "begun", false }, { dechunk(out) })
      assert.matches("handler failed", table.concat(lines))
      assert.matches("boom", table.concat(lines))
    end)

    it("waits while the client does not read, holding at most about HIGH bytes queued",
      function()
        local total, chunk = 8 * 1024 * 1024, string.rep("z", 64 * 1024)
        local result
        local srv, port = serve(function(app)
          app:get("/big", function(_, res)
            for _ = 1, total / #chunk do
              local ok, err = res:write(chunk)
              if not ok then result = err return end
            end
            result = "done"
          end)
        end)
        local read = client_bg(port, { "rcvbuf:4096", "open", get("/big"), "sleep:2",
          "until:0\\r\\n\\r\\n:10" })   -- to the last chunk
        local peak = 0
        assert.is_true(run_until(function()
          local p = srv:stats().pending_bytes
          if p > peak then peak = p end
          return read() ~= nil
        end, 25))
        local out = read()
        assert.are.equal("[until]", out:sub(1, #"[until]"))
        local body, complete = dechunk(out:sub(#"[until]" + 1))
        -- The handler waited instead of queueing what the kernel did not take: the queue stayed
        -- under HIGH plus one write.
        assert.is_true(peak <= stream.HIGH + #chunk + 64, "peak queued bytes " .. peak)
        assert.are.equal("done", result)
        assert.are.equal(total, #body)
        assert.is_true(complete)
      end)
  end)

  describe("res:sse", function()
    it("writes events, ids, retry, multi-line data, comments and the stream's headers",
      function()
        local _, port = serve(function(app)
          app:get("/events", function(_, res)
            local sse = res:sse({ retry = 2500, heartbeat = false })
            assert(sse:send({ n = 1 }, { event = "tick", id = "1" }))
            assert(sse:send("line one\nline two\r\nline three", { id = 2 }))
            assert(sse:comment("note"))
            assert(sse:send("last", { retry = 1000 }))
            assert(sse:send(sse.last_event_id or "none", { event = "resumed" }))
            return sse:close()
          end)
        end)
        local out = curl(("-i -H 'Last-Event-ID: 41' http://127.0.0.1:%d/events"):format(port))
        assert.matches("\r\nContent%-Type: text/event%-stream; charset=utf%-8\r\n", out)
        assert.matches("\r\nCache%-Control: no%-cache\r\n", out)
        assert.matches("\r\nX%-Accel%-Buffering: no\r\n", out)
        local body = out:match("\r\n\r\n(.*)$")
        assert.are.equal(table.concat({
          "retry: 2500\n\n",
          "event: tick\nid: 1\ndata: {\"n\":1}\n\n",
          "id: 2\ndata: line one\ndata: line two\ndata: line three\n\n",
          ": note\n\n",
          "retry: 1000\ndata: last\n\n",
          "event: resumed\ndata: 41\n\n",
        }), body)
      end)

    it("sends heartbeat comments while no event goes out", function()
      local _, port = serve(function(app)
        app:get("/quiet", function(_, res)
          local sse = res:sse({ heartbeat = 0.05 })
          sse:sleep(0.5)
          sse:send("bye")
        end)
      end)
      local out = curl(("http://127.0.0.1:%d/quiet"):format(port))
      local beats = select(2, out:gsub(": heartbeat\n\n", ""))
      assert.is_true(beats >= 2, out)
      assert.matches("data: bye\n\n$", out)
    end)

    it("rejects an event name or id that would end its line", function()
      local _, port, _, lines = serve(function(app)
        app:get("/bad", function(_, res)
          local sse = res:sse({ heartbeat = false })
          sse:send("x", { event = "a\nb" })
        end)
      end)
      local out = client(port, { get("/bad"), "read:5" })
      assert.is_nil(out:find("event:", 1, true))
      assert.matches("must not contain CR, LF or NUL", table.concat(lines))
    end)

    it("ends the handler's wait with a closed error when the client goes away, quietly",
      function()
        local result, sent
        local _, port, _, lines = serve(function(app)
          app:get("/live", function(_, res)
            local sse = res:sse({ heartbeat = 0.05 })
            sent = 0
            while true do
              local ok, err = sse:sleep(30)   -- only the client's leaving ends this early
              if not ok then result = err break end
              sent = sent + 1
            end
          end)
        end)
        local read = client_bg(port, { get("/live"), "readn:20:5", "close", "sleep:0.2" })
        assert.is_true(run_until(function() return read() ~= nil and result ~= nil end, 20))
        assert.are.equal("closed", result.code)
        assert.are.equal(0, sent)
        assert.are.equal("", table.concat(lines))
      end)
  end)

  describe("through zever.testing", function()
    it("collects the chunks of a streamed response as the body", function()
      local app = zever.app()
      app:get("/c", function(_, res)
        res:write("a")
        res:write("b")
        return res:finish()
      end)
      local r = testing.request(app, "GET", "/c")
      assert.are.equal(200, r.status)
      assert.are.equal("ab", r.body)
      assert.are.same({ "a", "b" }, { r.chunks[1], r.chunks[2] })
      assert.is_true(r.finished)
      assert.are.equal("text/plain; charset=utf-8", r.headers["content-type"])
    end)

    it("raises when a response of no request streams", function()
      local res = require("zever.response").new()
      assert.has_error(function() res:write("x") end,
        "res:write: this response has no connection to stream to (only a response of a " ..
        "request being served can stream)")
    end)
  end)
end)
