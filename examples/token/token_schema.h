/* SPDX-License-Identifier: Apache-2.0 */
/* token_schema.h - the token consumer's schema, version 1 (regions named
 * procctl:token-v1): the config the agent publishes and the status bytes a
 * holder reports, as C structs both sides include (token-client and
 * token-agent). The rules (docs/consumer-schemas.md): fixed-width fields,
 * explicit padding, no bitfields, unions or pointers, little-endian, every
 * size pinned; a reader takes exactly sizeof bytes and refuses others; a
 * change that is not an addition in reserved space is a new schema
 * version. */
#ifndef TOKEN_SCHEMA_H
#define TOKEN_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

#define TOKEN_SCHEMA_VERSION 1

/* The config (agent -> process): what the agent runs, for the holder's
 * log. A holder refuses (nacks -EINVAL) a payload of another size. */
struct token_config {
	uint64_t hold_ns;   /* 0 the round-robin hold the agent gives each turn */
	uint32_t resources; /* 8 how many resources of its kind it arbitrates */
	uint32_t reserved;  /* 12 0 */
};

/* The status bytes (process -> agent), rewritten after every turn. */
struct token_status {
	uint64_t turns;         /*  0 times it started using a resource */
	uint64_t held_ns;       /*  8 time it used one, in all (its turns so far) */
	uint64_t last_grant_id; /* 16 the grant of its last turn; 0: none yet */
	uint64_t hold_ns;       /* 24 the hold the agent announced (token_config); 0: none yet */
};

#ifdef __cplusplus
static_assert(sizeof(struct token_config) == 16, "token_config is 16 bytes");
static_assert(sizeof(struct token_status) == 32, "token_status is 32 bytes");
static_assert(offsetof(struct token_status, hold_ns) == 24, "token_status.hold_ns at 24");
#else
_Static_assert(sizeof(struct token_config) == 16, "token_config is 16 bytes");
_Static_assert(sizeof(struct token_status) == 32, "token_status is 32 bytes");
_Static_assert(offsetof(struct token_status, hold_ns) == 24, "token_status.hold_ns at 24");
#endif

#endif
