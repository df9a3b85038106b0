-- spec/dsl/golden.lua: golden files for the dsl specs. compare(path, actual) reads the committed
-- file and returns its text for an equality assertion; with ZEVER_UPDATE_GOLDEN=1 in the
-- environment it first writes actual there (regenerate on purpose, then review the git diff):
--
--   ZEVER_UPDATE_GOLDEN=1 bin/zever test spec/dsl

local sys = require "zever.sys"

local M = {}

M.dir = sys.home() .. "/dsl/testdata"
M.update = os.getenv("ZEVER_UPDATE_GOLDEN") == "1"

M.read = require("spec.support.files").slurp

-- The .zen fixtures of dsl/testdata, sorted, without their extension.
function M.fixtures()
  local names = {}
  for _, file in ipairs(sys.listdir(M.dir) or {}) do
    local name = file:match("^(.+)%.zen$")
    if name then names[#names + 1] = name end
  end
  table.sort(names)
  return names
end

-- The expected text for path: actual itself after writing it when updating, else the file's
-- text ("<missing path>" when absent, so that the assertion fails and names it).
function M.expected(path, actual)
  if M.update then
    local f = assert(io.open(path, "wb"))
    f:write(actual)
    f:close()
  end
  return M.read(path) or ("<missing " .. path .. ">")
end

return M
