-- zever.file: reading a whole file, which the configuration, the CLI's generators and
-- zever.testing share.
--
--   local file = require "zever.file"
--   file.read(path) -> its bytes | nil when it is missing or unreadable

local open = io.open

local M = {}

function M.read(path)
  local f = open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- In a bundle, a file of the app folder is read from the payload first (zever.assets).
if require("zever.bundle").active then M.read = require("zever.assets").read end

return M
