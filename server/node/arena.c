/* SPDX-License-Identifier: Apache-2.0 */
/* arena.c - the memory of one answer (its messages allocated together and
 * freed after packing), a job answered and freed, and the API's forms of
 * ids: an instance or grant id as 16 hex digits, a resource id as a UUID,
 * a process by its pid and instance. It calls nothing of the loop's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node_int.h"
#include "sys/prom.h"

void *ar_alloc(struct arena *a, size_t size)
{
	void *p;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		void **blk = realloc(a->blk, cap * sizeof *blk);
		if (!blk) {
			a->failed = 1;
			return NULL;
		}
		a->blk = blk;
		a->cap = cap;
	}
	p = calloc(1, size ? size : 1);
	if (!p) {
		a->failed = 1;
		return NULL;
	}
	a->blk[a->n++] = p;
	return p;
}

char *ar_str(struct arena *a, const char *s)
{
	size_t n = strlen(s);
	char *p = ar_alloc(a, n + 1);
	if (p)
		memcpy(p, s, n);
	return p ? p : (char *)"";
}

void ar_free(struct arena *a)
{
	size_t i;
	for (i = 0; i < a->n; i++)
		free(a->blk[i]);
	free(a->blk);
	memset(a, 0, sizeof *a);
}

/* Answer a job and free it. */
void job_finish(struct node_job *job, enum node_code code, const char *msg, const ProtobufCMessage *resp)
{
	job->ops->reply(job, code, msg, code == NODE_OK ? resp : NULL);
	if (job->req)
		protobuf_c_message_free_unpacked(job->req, NULL);
	prom_free(job->metrics);
	free(job);
}

void job_finish_arena(struct node_job *job, struct arena *a, const ProtobufCMessage *resp)
{
	if (a->failed)
		job_finish(job, NODE_RESOURCE_EXHAUSTED, "out of memory", NULL);
	else
		job_finish(job, NODE_OK, NULL, resp);
	ar_free(a);
}

/* An instance or grant id as the API and the logs show it: 16 lowercase
 * hex digits; 0 (none): empty. */
char *hexid(char buf[HEXID_LEN], uint64_t v)
{
	if (v)
		snprintf(buf, HEXID_LEN, "%016llx", (unsigned long long)v);
	else
		buf[0] = 0;
	return buf;
}

/* An id from a request: empty (none, 0) or 16 hex digits; 0 or -1. */
int hexid_parse(const char *s, uint64_t *v)
{
	size_t i;
	*v = 0;
	if (!s || !*s)
		return 0;
	for (i = 0; i < 16; i++) {
		int d = s[i] >= '0' && s[i] <= '9'   ? s[i] - '0'
			: s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
			: s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 10
						     : -1;
		if (d < 0)
			return -1;
		*v = *v << 4 | (uint64_t)d;
	}
	return s[16] ? -1 : 0;
}

char *ar_hexid(struct arena *a, uint64_t v)
{
	char buf[HEXID_LEN];
	return ar_str(a, hexid(buf, v));
}

char *ar_resid(struct arena *a, const uint8_t id[16])
{
	char buf[37];
	procctl_resource_id_format(id, buf);
	return ar_str(a, buf);
}

PbRef *mk_ref(struct arena *a, pid_t pid, uint64_t instance)
{
	PbRef *r = ar_alloc(a, sizeof *r);
	if (!r)
		return NULL;
	procctl__v1__process_ref__init(r);
	r->pid = pid;
	r->instance_id = ar_hexid(a, instance);
	return r;
}
