-- zever.h2: HTTP/2 for `zever serve` (host/h2/, libnghttp2, loaded on first require;
-- docs/http2.md).
--
--   h2.layer([tls_context]) -> layer   HTTP/2 over a zever.tls context (offered by ALPN: make
--                                      the context with h2 = true), or, without one, h2c with
--                                      prior knowledge on a plain port; HTTP/1.1 connections
--                                      pass through unchanged either way
--   h2.version()            -> nghttp2's version text
--
-- zever.http takes a layer as http.listen{tls = layer}.

local core = require "zever.h2_core"

local M = {}

function M.layer(ctx)
  return core.layer(ctx)
end

M.version = core.version

return M
