-- bench/prekit_libc.lua: the two libc calls bench/config_callgrind.lua needs, declared for a
-- binary older than zever.cdef.libc (the pre-kit tree e6af612 that #16's benchmarks are compared
-- against). A tree that has zever.cdef.libc never loads this file; spec/host/cdef_spec.lua lets
-- it alone declare C outside zever.cdef, for that reason.
local ffi = require "ffi"
pcall(ffi.cdef, "int clearenv(void); int setenv(const char *, const char *, int);")
return ffi.C
