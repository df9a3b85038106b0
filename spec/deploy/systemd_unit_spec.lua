-- zever systemd-unit: the hardened service and socket units it prints pass
-- `systemd-analyze verify` (where it is installed), and the verifier is shown to catch a bad
-- unit, so a pass means something.

local process = require "spec.support.process"
local files = require "spec.support.files"
local sys = require "zever.sys"

local quote = process.quote
local HOME = sys.home()

describe("zever systemd-unit", function()
  local tmp

  setup(function() tmp = files.tmpdir({}, "zv-units") end)
  teardown(function() files.rm_rf(tmp) end)

  it("prints a hardened notify service and its socket for the app", function()
    local r = process.zever("systemd-unit", HOME .. "/examples/bookmarks", "--listen", "127.0.0.1:8081")
    assert.equal(0, r.code, r.stderr)
    for _, line in ipairs({ "Type=notify", "DynamicUser=yes", "ProtectSystem=strict",
      "StateDirectory=bookmarks", "NoNewPrivileges=yes", "Requires=bookmarks.socket",
      "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "ExecReload=/bin/kill -HUP $MAINPID",
      "Environment=DB_DSN=sqlite:/var/lib/bookmarks/bookmarks.db", "ListenStream=127.0.0.1:8081",
      "WatchdogSec=30s" }) do
      assert.truthy(r.stdout:find("\n" .. line .. "\n", 1, true), line)
    end
    assert.matches("\nExecStart=" .. sys.exe():gsub("%p", "%%%0") .. " serve /", r.stdout)
  end)

  it("rejects a bad --listen and a bad --name with exit 2", function()
    local r = process.zever("systemd-unit", HOME .. "/examples/hello", "--listen", "8080")
    assert.equal(2, r.code)
    assert.matches("want %-%-listen host:port", r.stderr)
    r = process.zever("systemd-unit", HOME .. "/examples/hello", "--name", "a b")
    assert.equal(2, r.code)
  end)

  it("writes units that systemd-analyze verify accepts", function()
    if process.run("command -v systemd-analyze").code ~= 0 then
      pending("systemd-analyze is missing (apt-get install systemd)")
      return
    end
    -- ExecStart must name an existing program for verify: use the host itself.
    local r = process.zever("systemd-unit", HOME .. "/examples/bookmarks", "--exec", sys.exe(),
      "-o", tmp)
    assert.equal(0, r.code, r.stderr)
    local units = quote(tmp .. "/bookmarks.service") .. " " .. quote(tmp .. "/bookmarks.socket")
    r = process.run("systemd-analyze verify " .. units)
    assert.equal(0, r.code, r.stderr)
    assert.equal("", r.stderr)
    -- The control: the same service with an unknown setting is reported.
    files.write(tmp .. "/bad.service", files.read(tmp .. "/bookmarks.service")
      :gsub("NoNewPrivileges=yes", "NoNewPrivilegez=yes"))
    r = process.run("systemd-analyze verify " .. quote(tmp .. "/bad.service"))
    assert.matches("NoNewPrivilegez", r.stderr)
  end)
end)
