/* procctl_agent.h - libprocctl-agent, the agent side of procctl.
 *
 * Calls return 0, a count or a generation on success and a negative errno
 * on failure; pointer returns are NULL with errno set. The library never
 * prints. SPEC.md is the contract this implements.
 *
 *   Reasons   why a region or a state block was refused
 */
#ifndef PROCCTL_AGENT_H
#define PROCCTL_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procctl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Why a region or a state block was refused. Every refusal has one, with
 * a stable name (procctl_reject_name) for logs and metrics. */
enum procctl_reject {
	PROCCTL_REJECT_NONE = 0,
	PROCCTL_REJECT_BAD_MAGIC,      /* not a procctl header */
	PROCCTL_REJECT_BAD_VERSION,    /* unknown major version */
	PROCCTL_REJECT_BAD_HEADER_CRC, /* header bytes do not match their CRC */
	PROCCTL_REJECT_BAD_SIZE,       /* region size wrong, or over the hard limit */
	PROCCTL_REJECT_BAD_LAYOUT,     /* offsets or capacities outside the file or limits */
	PROCCTL_REJECT_BAD_FIELD,      /* a field outside its SPEC.md range */
	PROCCTL_REJECT_STATE_MAGIC,    /* state block: not a PROCSTAT block */
	PROCCTL_REJECT_STATE_LAYOUT,   /* state block: sizes disagree with the header */
	PROCCTL_REJECT_STATE_INSTANCE, /* state block: another instance's */
	PROCCTL_REJECT_STATE_WRITER,   /* state block: written by another pid (a forked child's) */
	PROCCTL_REJECT_STATE_CRC,      /* state block: bytes do not match their CRC */
	PROCCTL_REJECT_STATE_CANARY,   /* fork canary differs: not the creator's memory */
	PROCCTL_REJECT_NOT_MEMFD,      /* the fd is not a sealable tmpfs memfd */
	PROCCTL_REJECT_HUGETLB,        /* a hugetlbfs memfd: its creator could SIGBUS the agent */
	PROCCTL_REJECT_UNSEALED,       /* SHRINK, GROW or SEAL missing */
	PROCCTL_REJECT_WRONG_SEALS,    /* WRITE or FUTURE_WRITE set: the agent could not write */
	PROCCTL_REJECT_FD_SWAPPED,     /* the fd fetched is not the one the scan saw */
	PROCCTL_REJECT_CONSUMER_MISMATCH, /* the name and the header disagree */
	PROCCTL_REJECT_NOT_CREATOR,    /* header pid is not the process's: an inherited fd */
	PROCCTL_REJECT__COUNT
};

const char *procctl_reject_name(enum procctl_reject why);

#ifdef __cplusplus
}
#endif
#endif
