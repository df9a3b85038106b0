/*
 * secrets.h: the pure core of the secrets battery (no Lua): the permission check of secret
 * files. See secrets_ffi.h for zv_secrets_stat.
 */
#ifndef ZV_SECRETS_H
#define ZV_SECRETS_H

#include <stdint.h>

#include "secrets_ffi.h"

#endif
