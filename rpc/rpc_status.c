/* SPDX-License-Identifier: Apache-2.0 */
/* rpc_status.c - gRPC status codes by name and as HTTP (rpc_status.h). */
#include "rpc_status.h"

const char *rpc_status_name(unsigned code)
{
	static const char *const names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
					    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
					    "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
					    "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
	return code < sizeof names / sizeof names[0] ? names[code] : "UNKNOWN";
}

unsigned rpc_status_http(unsigned code)
{
	switch (code) {
	case 0: return 200;  /* OK */
	case 3:              /* INVALID_ARGUMENT */
	case 9:              /* FAILED_PRECONDITION */
	case 11: return 400; /* OUT_OF_RANGE */
	case 7: return 403;  /* PERMISSION_DENIED */
	case 16: return 401; /* UNAUTHENTICATED */
	case 5: return 404;  /* NOT_FOUND */
	case 6: return 409;  /* ALREADY_EXISTS */
	case 8: return 429;  /* RESOURCE_EXHAUSTED */
	case 1: return 499;  /* CANCELLED */
	case 12: return 501; /* UNIMPLEMENTED */
	case 14: return 503; /* UNAVAILABLE */
	case 4: return 504;  /* DEADLINE_EXCEEDED */
	default: return 500;
	}
}
