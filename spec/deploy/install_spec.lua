-- make install and make deb (docs/deploy.md): the installed tree and the Debian package run
-- on their own, ZEVER_HOME unset. The package is installed into a temporary root with
-- `dpkg --root` (its own dpkg database there), never into the real system.

local process = require "spec.support.process"
local files = require "spec.support.files"
local sys = require "zever.sys"

local quote = process.quote
local HOME = sys.home()

-- A script that loads a LAZY module (lib/zever/sqlite.so) and a framework module.
local SCRIPT = "local db = assert(require('zever.db').open('sqlite::memory:'))\n" ..
  "print(db:query('SELECT 40 + 2 AS n')[1].n)\n"

describe("make install and make deb #slow", function()
  local tmp

  setup(function()
    tmp = files.tmpdir({ ["s.lua"] = SCRIPT }, "zv-install")
  end)
  teardown(function() files.rm_rf(tmp) end)

  local function runs(zever)
    local r = process.run("env -u ZEVER_HOME " .. quote(zever) .. " --version")
    assert.equal(0, r.code, r.stderr)
    assert.matches("^zever " .. sys.version:gsub("%.", "%%."), r.stdout)
    r = process.run("env -u ZEVER_HOME " .. quote(zever) .. " run " .. quote(tmp .. "/s.lua"))
    assert.equal(0, r.code, r.stderr)
    assert.equal("42\n", r.stdout)
    r = process.run("env -u ZEVER_HOME " .. quote(zever) .. " --help")
    assert.matches("bundle", r.stdout)
  end

  it("installs a tree under DESTDIR/PREFIX that runs on its own", function()
    local r = process.run("make -s -C " .. quote(HOME) .. " install DESTDIR=" .. quote(tmp ..
      "/dest") .. " PREFIX=/opt/zv")
    assert.equal(0, r.code, r.stderr)
    runs(tmp .. "/dest/opt/zv/bin/zever")
  end)

  it("builds a .deb with its dependencies declared, which dpkg installs and runs", function()
    if process.run("command -v dpkg-deb && command -v dpkg-shlibdeps").code ~= 0 then
      pending("dpkg-deb or dpkg-shlibdeps is missing (apt-get install dpkg-dev)")
      return
    end
    local r = process.run("make -s -C " .. quote(HOME) .. " deb DEB_DIR=" .. quote(tmp ..
      "/stage") .. " DEB_OUT=" .. quote(tmp .. "/out"))
    assert.equal(0, r.code, r.stderr)
    local deb = files.sh("ls " .. quote(tmp .. "/out") .. "/zever_*.deb")
    assert.matches("zever_" .. sys.version:gsub("%.", "%%.") .. "_.*%.deb$", deb)
    local depends = files.sh("dpkg-deb -f " .. quote(deb) .. " Depends")
    for _, pkg in ipairs({ "libc6", "libsqlite3%-0", "libpq5", "libssl3", "lua%-lpeg" }) do
      assert.matches(pkg, depends)
    end
    local root = tmp .. "/root"
    assert(os.execute("mkdir -p " .. quote(root .. "/var/lib/dpkg/info") .. " " ..
      quote(root .. "/var/lib/dpkg/updates") .. " && touch " .. quote(root .. "/var/lib/dpkg/status")))
    r = process.run("dpkg --root=" .. quote(root) .. " --force-depends --force-script-chrootless" ..
      " -i " .. quote(deb))
    assert.equal(0, r.code, r.stderr .. r.stdout)
    assert.matches("ii%s+zever", files.sh("dpkg --root=" .. quote(root) .. " -l zever"))
    runs(root .. "/usr/bin/zever")
  end)
end)
