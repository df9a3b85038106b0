-- spec.support.http_script: drive zever.http servers of this state's loop from real clients in
-- the background (spec/support/http_client.py, a scripted raw TCP client, and curl), for the
-- specs of host/http that serve on the spec's own loop.
--
--   local hs = require "spec.support.http_script"
--   local read = hs.spawn(function(out) return "cmd > " .. out end)  -- reader: content | nil
--   local read = hs.python(function(out) return { script, args... } end[, true])
--                                             -- python3 script args... forked warm (stdout to
--                                             -- out when true, else the script writes out)
--   local read = hs.client_bg(port, steps)    -- the scripted client in the background
--   hs.client(port, steps)                    -- runs it while the loop serves; what it received
--   hs.curl(args)                             -- curl -s -m 10 args while the loop serves
--   hs.get(path[, extra_headers])             -- a "send:" step of a GET with Host: t
--   local set = hs.server_set()               -- the zever.http servers a spec file owns:
--   set.serve(opts, handler) -> srv, port     --   listen (port 0 unless given) and remember
--   set.close()                               --   close them all (an after_each)
--
-- The loop runs (zever.testing.run_until) until the client has written its output file, so the
-- server answers meanwhile; time only bounds how long a spec waits.

local process = require "spec.support.process"
local http = require "zever.http"
local loop = require "zever.loop"
local run_until = require("zever.testing").run_until

local q = process.quote
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "spec/support"
local CLIENT = here .. "/http_client.py"

local M = {}

-- Starts a background shell command writing to a fresh file; returns a reader that yields the
-- file's content once it exists (nil before).
local function reader(out)
  local content
  return function()
    if content then return content end
    local f = io.open(out, "rb")
    if not f then return nil end
    content = f:read("*a")
    f:close()
    os.remove(out)
    return content
  end
end

local function fresh_path()
  local out = os.tmpname()
  os.remove(out)
  return out
end

function M.spawn(make_cmd)
  local out = fresh_path()
  os.execute("(" .. make_cmd(out) .. ") >/dev/null 2>&1 &")
  return reader(out)
end

-- Runs `python3 argv...` in the background, forked from the warm interpreter of
-- process.python_bg; make_argv(out) returns argv given the output file. With stdout, the
-- script's stdout and stderr are the file; without, the script writes out itself (and is given
-- its path). Returns the reader of out.
function M.python(make_argv, stdout)
  local out = fresh_path()
  process.python_bg(make_argv(out), stdout and out or nil)
  return reader(out)
end

-- Starts the scripted client (see http_client.py for the steps) in the background: the same
-- script and arguments as `python3 http_client.py PORT OUT STEPS...`.
function M.client_bg(port, steps)
  return M.python(function(out)
    local argv = { CLIENT, port, out }
    for _, s in ipairs(steps) do argv[#argv + 1] = s end
    return argv
  end)
end

-- Runs the scripted client while the loop serves; returns what it received.
function M.client(port, steps)
  local read = M.client_bg(port, steps)
  assert(run_until(read, 25), "the client did not finish")
  return read()
end

-- Runs curl with the given arguments; returns its output (headers included with -i).
function M.curl(args)
  local read = M.spawn(function(out)
    return ("curl -s -m 10 %s > %s.tmp; mv %s.tmp %s"):format(args, q(out), q(out), q(out))
  end)
  assert(run_until(read, 15), "curl did not finish")
  return read()
end

function M.get(path, extra)
  return "send:GET " .. path .. " HTTP/1.1\\r\\nHost: t\\r\\n" .. (extra or "") .. "\\r\\n"
end

function M.server_set()
  local list, set = {}, {}
  function set.serve(opts, handler)
    opts.port = opts.port or 0
    local srv = assert(http.listen(opts, handler))
    list[#list + 1] = srv
    return srv, srv:port()
  end
  function set.close()
    for i = #list, 1, -1 do
      list[i]:close()
      list[i] = nil
    end
    loop.run("nowait")
  end
  return set
end

return M
