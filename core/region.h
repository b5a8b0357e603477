/* SPDX-License-Identifier: Apache-2.0 */
/* region.h - what an agent does to one mapped procctl region: validate its
 * header, claim it, publish, clear, grant, heartbeat, release, uninstall
 * (SPEC.md sections 3, 6, 8 and 9). Internal to libprocctl-agent.
 *
 * The agent never trusts what it reads back from the shared region (the
 * process can write it too): generation, seq, owner word, heartbeat, the
 * current payload and grants are kept here, in private memory, and written
 * out whole. Calls return 0, a generation, or a negative errno.
 */
#ifndef PROCCTL_REGION_H
#define PROCCTL_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "procctl.h"
#include "procctl_agent.h"

/* The largest state_size a header may give (SPEC.md 13.2): the block the
 * hard limits allow, plus one page, whatever the header's capacities:
 * 64 + 64 * 64 + 65536 + 4096 = 73,792 bytes. */
#define PROCCTL_STATE_SIZE_LIMIT (PROCCTL_STATE_SIZE(PROCCTL_RES_MAX, PROCCTL_STATE_DATA_MAX) + PROCCTL_HDR_AREA)
_Static_assert(PROCCTL_STATE_SIZE_LIMIT == 73792, "SPEC.md 13.2 gives 73,792");

/* Validate a header copy (header_size bytes at hdr) against a file of
 * file_size bytes; PROCCTL_REJECT_NONE when every SPEC.md 13.2 check holds. */
enum procctl_reject procctl_hdr_check(const void *hdr, size_t len, uint64_t file_size);

struct procctl_region {
	struct procctl_hdr hdr;     /* validated private copy */
	unsigned char *map;         /* read/write mapping of the whole region */
	size_t size;
	struct procctl_ctrl *ctrl;
	/* the agent's own copies (SPEC.md 6.1) */
	uint64_t owner;             /* owner word as last written */
	uint64_t gen;               /* last write generation */
	uint64_t config_gen;        /* generation of the current config */
	uint64_t heartbeat;
	uint64_t lease_ns;
	uint32_t seq;               /* even seq the last write section left */
	uint32_t active;            /* slot readers use */
	uint32_t slot_flags;        /* PROCCTL_SLOT_* of the current config */
	uint32_t length;            /* payload bytes */
	uint32_t ngrants;
	unsigned char *payload;     /* payload_room bytes (grown to the longest config written
	                             * or adopted; NULL before any: an idle region costs none) */
	uint32_t payload_room;
	struct procctl_grant_entry *grants; /* grant_cap entries */
	int broken;                 /* a write section failed: never write again */
	int event_fd;               /* the process's event socket (SPEC.md 6.6), checked; -1: none */
};

/* Map fd, a memfd of size bytes already checked to be a sealed tmpfs
 * memfd, read/write; copy its header once and validate the copy. On
 * refusal returns -EPROTO and sets *why. */
int procctl_region_map(struct procctl_region *r, int fd, uint64_t size, enum procctl_reject *why);
void procctl_region_unmap(struct procctl_region *r);

/* The config generation the region holds now, read from its shared
 * memory (the active slot's, under the seqlock, as a reader takes it;
 * checked for sense, not by CRC: for display): what another agent wrote
 * too. 0: none, or no stable read in a few tries. */
uint64_t procctl_region_peek_config_gen(const struct procctl_region *r);

/* Claim the region as (domain, epoch >= 1) with the given lease; the
 * caller holds the consumer's node lock. Adopts the current generation,
 * config and grants (SPEC.md 8.3), repairs a write section a dead writer
 * left open, and returns the claim's generation. -EEXIST: the owner word
 * names another domain (a conflict: stay passive). -EBADMSG: nothing to
 * adopt and a generation past PROCCTL_GEN_MAX (refused). */
int64_t procctl_region_claim(struct procctl_region *r, uint32_t domain, uint32_t epoch, uint64_t lease_ns);

/* Writes by the owner; each is one write section that moves seq and wakes
 * the process, and returns the new generation (or 0 for writes that carry
 * no slot). -EPERM: not claimed, or released or uninstalled. -EBUSY: seq
 * or the owner word is not where this agent left it (another writer, or
 * the process punched a hole): the region is broken for this agent, every
 * later write fails the same way. Calls on one region must not overlap;
 * the heartbeat included (client.c serialises them). */
int64_t procctl_region_publish(struct procctl_region *r, const void *payload, uint32_t len);
int64_t procctl_region_clear(struct procctl_region *r);
int64_t procctl_region_grant(struct procctl_region *r, const procctl_resource_t *res, uint64_t grant_id);
int64_t procctl_region_revoke(struct procctl_region *r, const procctl_resource_t *res);
int64_t procctl_region_drop(struct procctl_region *r, const procctl_resource_t *res);
int procctl_region_set_lease(struct procctl_region *r, uint64_t lease_ns);
int procctl_region_release(struct procctl_region *r);
int64_t procctl_region_uninstall(struct procctl_region *r);

/* Move the heartbeat (not a write section: no seq move, no wake). */
void procctl_region_heartbeat(struct procctl_region *r);

#endif
