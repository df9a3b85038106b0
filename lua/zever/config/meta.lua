-- zever.config.meta: where each loaded configuration came from (config.sources reads it), keyed
-- weakly by the cfg table. A module of its own so that a worker of `zever serve` can register the
-- configuration its main thread loaded (zever.app.preload) without loading the config modules.
return setmetatable({}, { __mode = "k" })
