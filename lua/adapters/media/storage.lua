-- adapters.media.storage: media over the app's storage battery (app.storage): the bytes of an
-- object are read through it, a range at a time.
--
--   impl.store                      the zever.storage object
--   storage.open(section, ctx)      -> impl | nil, err (the adapter contract)

local M = {}

function M.new(opts)
  return { store = opts.store }
end

function M.open(_, ctx)
  local store, err = ctx:get("storage")
  if not store then return nil, err end
  return M.new{ store = store }
end

return M
