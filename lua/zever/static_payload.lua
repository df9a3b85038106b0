-- zever.static_payload: which bundle folder an app:static root stands for. In a bundle
-- (`zever bundle`, docs/deploy.md) a root inside the app folder whose files the bundle carries
-- ("public/" -> "app/public") is served by the C server from the payload (host/http/
-- stream_static.c), never from the disk; outside a bundle, or for a root the bundle does not
-- carry (left out with --exclude, or outside the app folder), the disk serves it.
--
--   static_payload.folder(root) -> "app/public" | nil
--
-- It must not read the disk: the answer depends on the bundle's index alone.

local bundle = require "zever.bundle"

local M = {}

function M.folder(root)
  if type(root) ~= "string" then error("static_payload.folder: want a folder path", 2) end
  if not bundle.active then return nil end
  local name = require("zever.assets").name(root)
  if not name or name == "app" then
    -- The app folder itself would serve zever.yaml and the app's bytecode: never from the
    -- payload (a mount of the app folder is served from disk, as from a checkout).
    return nil
  end
  name = name:gsub("/+$", "")
  if #bundle.list(name .. "/") == 0 then return nil end
  return name
end

return M
