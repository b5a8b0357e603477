/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_kubewrite - an API server's answer to a status write it refused,
 * as kubewrite_why reads it for the log: "HTTP code: " and the Status's
 * message, else the body (to its first NUL), always terminated within
 * the room given, cut only when the room is full; and the log line's
 * quoting of it (node_log_quote) printable, and read back as a prefix of
 * it. Input: two bytes of HTTP code, one of room (0: the daemon's 600),
 * then the body (at most the 4,096 bytes kubewrite keeps). */
#define _GNU_SOURCE 1
#include <ctype.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kube/kubewrite.h"
#include "sys/log.h"

#define BODY_MAX 4096
#define ROOM 600

/* q (node_log_quote's) read back: a prefix of s, or a finding. */
static void unquoted_prefix(const char *q, const char *s)
{
	size_t i = 0;
	unsigned x;
	while (*q) {
		char c = *q++;
		if (c == '"')
			abort(); /* a quote left bare would end the log's field */
		if (c == '\\') {
			if (*q == '"' || *q == '\\')
				c = *q++;
			else if (q[0] == 'x' && isxdigit((unsigned char)q[1]) && isxdigit((unsigned char)q[2]) &&
				 sscanf(q + 1, "%2x", &x) == 1)
				c = (char)x, q += 3;
			else
				abort();
		}
		if (s[i++] != c)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char body[BODY_MAX + 1], why[ROOM], head[32], q[ROOM];
	const char *msg, *want;
	size_t len, room, n, h;
	json_t *st;
	long code;

	if (size < 3 || size - 3 > BODY_MAX)
		return 0;
	code = (long)(data[0] << 8 | data[1]);
	room = data[2] ? data[2] : ROOM;
	len = size - 3;
	memcpy(body, data + 3, len);
	body[len] = 0;
	memset(why, 0xa5, sizeof why);
	kubewrite_why(body, len, code, why, room);

	/* Terminated within the room, nothing written past it. */
	n = strnlen(why, room);
	if (n == room || (room < sizeof why && (unsigned char)why[room] != 0xa5))
		abort();
	/* The head, then what the answer says: cut only where the room is full. */
	h = (size_t)snprintf(head, sizeof head, "HTTP %ld: ", code);
	if (strncmp(why, head, n < h ? n : h))
		abort();
	st = json_loadb(body, len, 0, NULL);
	msg = json_string_value(json_object_get(st, "message"));
	want = msg ? msg : body;
	if (n > h && strncmp(why + h, want, n - h))
		abort();
	if (n + 1 < room && (n < h || strlen(want) != n - h))
		abort();
	json_decref(st);

	/* The log's field: printable, and what it says is why's. */
	node_log_quote(q, sizeof q, why);
	fuzz_printable(q);
	unquoted_prefix(q, why);
	return 0;
}
