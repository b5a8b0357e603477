/* SPDX-License-Identifier: Apache-2.0 */
/* reflect_answer.c - answers to ServerReflectionRequests from the index
 * reflect.c built (reflect_int.h). The requests come from the network:
 * they pass our wire reader before protobuf-c's, are bounded in size, and
 * names echoed back are cut short and printable. */
#include "reflect_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/reflection/v1/reflection.pb-c.h"

#define REQ_MAX (64u << 10)   /* a request */
#define ECHO_MAX 200          /* of a name, in an error message */
#define GRPC_NOT_FOUND 5
#define GRPC_UNIMPLEMENTED 12

typedef Grpc__Reflection__V1__ServerReflectionRequest Request;
typedef Grpc__Reflection__V1__ServerReflectionResponse Response;

/* A file and its imports, transitively, each once, breadth first. */
static int files_answer(const struct reflect *r, uint32_t first, Response *resp,
			Grpc__Reflection__V1__FileDescriptorResponse *fdr)
{
	uint32_t *queue, head = 0, tail = 0, i;
	ProtobufCBinaryData *bin;
	uint8_t *seen;

	queue = malloc(r->nfiles * sizeof *queue);
	seen = calloc(r->nfiles, 1);
	bin = malloc(r->nfiles * sizeof *bin);
	if (!queue || !seen || !bin) {
		free(queue);
		free(seen);
		free(bin);
		return -ENOMEM;
	}
	queue[tail++] = first;
	seen[first] = 1;
	while (head < tail) {
		const struct rfile *f = &r->files[queue[head++]];
		for (i = 0; i < f->ndeps; i++) {
			uint32_t d = r->deps[f->dep + i];
			if (!seen[d]) {
				seen[d] = 1;
				queue[tail++] = d;
			}
		}
	}
	for (i = 0; i < tail; i++) {
		bin[i].data = (uint8_t *)(uintptr_t)r->files[queue[i]].p; /* pack only reads */
		bin[i].len = r->files[queue[i]].len;
	}
	free(queue);
	free(seen);
	fdr->n_file_descriptor_proto = tail;
	fdr->file_descriptor_proto = bin;
	resp->message_response_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE;
	resp->file_descriptor_response = fdr;
	return 0;
}

/* 'WHAT "NAME" not found', the name cut short and printable ASCII only:
 * it came from the network, and the message must stay valid UTF-8. */
static void not_found(Response *resp, Grpc__Reflection__V1__ErrorResponse *err, char *msg, size_t cap,
		      const char *what, const char *name)
{
	char echo[ECHO_MAX + 4];
	size_t i;
	for (i = 0; name[i] && i < ECHO_MAX; i++)
		echo[i] = name[i] >= 0x20 && name[i] < 0x7f ? name[i] : '?';
	strcpy(echo + i, name[i] ? "..." : "");
	snprintf(msg, cap, "%s \"%s\" not found", what, echo);
	err->error_code = GRPC_NOT_FOUND;
	err->error_message = msg;
	resp->message_response_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
	resp->error_response = err;
}

/* protobuf-c takes field number 0 and echoes it back, which no parser
 * reads: the request and its ExtensionRequest pass our reader first. */
static int request_valid(const uint8_t *p, size_t len, int top)
{
	struct pb b = {p, p + len};
	struct pbf f;
	int rc;
	while ((rc = reflect_pb_next(&b, &f)) > 0)
		if (top && f.num == 5 && f.wt == 2 && (rc = request_valid(f.p, f.len, 0)))
			return rc;
	return rc;
}

static const char *symbol_name(const char *s)
{
	return s[0] == '.' ? s + 1 : s;
}

/* One answer under construction: the response and what it points at. */
struct answer {
	Response resp;
	Grpc__Reflection__V1__FileDescriptorResponse fdr;
	Grpc__Reflection__V1__ExtensionNumberResponse enr;
	Grpc__Reflection__V1__ListServiceResponse lsr;
	Grpc__Reflection__V1__ErrorResponse err;
	Grpc__Reflection__V1__ServiceResponse *svc, **svcp;
	int32_t *numbers;
	char msg[ECHO_MAX + 64];
};

static int list_services(const struct reflect *r, struct answer *a)
{
	uint32_t i;
	a->svc = calloc(r->nservices ? r->nservices : 1, sizeof *a->svc);
	a->svcp = calloc(r->nservices ? r->nservices : 1, sizeof *a->svcp);
	if (!a->svc || !a->svcp)
		return -ENOMEM;
	for (i = 0; i < r->nservices; i++) {
		grpc__reflection__v1__service_response__init(&a->svc[i]);
		a->svc[i].name = r->arena + r->services[i];
		a->svcp[i] = &a->svc[i];
	}
	a->lsr.n_service = r->nservices;
	a->lsr.service = a->svcp;
	a->resp.message_response_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE;
	a->resp.list_services_response = &a->lsr;
	return 0;
}

static int file_by_name(const struct reflect *r, const char *file, struct answer *a)
{
	int f = reflect_file_find(r, file, strlen(file));
	if (f >= 0)
		return files_answer(r, (uint32_t)f, &a->resp, &a->fdr);
	not_found(&a->resp, &a->err, a->msg, sizeof a->msg, "file", file);
	return 0;
}

static int file_of_symbol(const struct reflect *r, const char *symbol, struct answer *a)
{
	const char *name = symbol_name(symbol);
	const struct rsym *s = reflect_sym_find(r, name, strlen(name));
	if (s)
		return files_answer(r, s->file, &a->resp, &a->fdr);
	not_found(&a->resp, &a->err, a->msg, sizeof a->msg, "symbol", symbol);
	return 0;
}

static int file_of_extension(const struct reflect *r, const Grpc__Reflection__V1__ExtensionRequest *x, struct answer *a)
{
	const char *name = symbol_name(x->containing_type);
	size_t n = strlen(name);
	char what[32];
	uint32_t i;
	for (i = 0; i < r->nexts; i++)
		if (r->exts[i].number == x->extension_number &&
		    !reflect_name_cmp(r->arena + r->exts[i].extendee, r->exts[i].extendee_len, name, n))
			return files_answer(r, r->exts[i].file, &a->resp, &a->fdr);
	snprintf(what, sizeof what, "extension %d of", (int)x->extension_number);
	not_found(&a->resp, &a->err, a->msg, sizeof a->msg, what, x->containing_type);
	return 0;
}

static int extension_numbers(const struct reflect *r, const char *type, struct answer *a)
{
	const char *name = symbol_name(type);
	size_t n = strlen(name);
	const struct rsym *s = reflect_sym_find(r, name, n);
	uint32_t i;
	if (!s || s->kind != SYM_MESSAGE) {
		not_found(&a->resp, &a->err, a->msg, sizeof a->msg, "message type", type);
		return 0;
	}
	if (!(a->numbers = malloc((r->nexts ? r->nexts : 1) * sizeof *a->numbers)))
		return -ENOMEM;
	for (i = 0; i < r->nexts; i++)
		if (!reflect_name_cmp(r->arena + r->exts[i].extendee, r->exts[i].extendee_len, name, n))
			a->numbers[a->enr.n_extension_number++] = r->exts[i].number;
	a->enr.base_type_name = r->arena + s->name;
	a->enr.extension_number = a->numbers;
	a->resp.message_response_case =
		GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE;
	a->resp.all_extension_numbers_response = &a->enr;
	return 0;
}

static int answer_request(const struct reflect *r, const Request *rq, struct answer *a)
{
	switch (rq->message_request_case) {
	case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
		return list_services(r, a);
	case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME:
		return file_by_name(r, rq->file_by_filename, a);
	case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL:
		return file_of_symbol(r, rq->file_containing_symbol, a);
	case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION:
		return file_of_extension(r, rq->file_containing_extension, a);
	case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
		return extension_numbers(r, rq->all_extension_numbers_of_type, a);
	default: /* none, or one newer than this file */
		a->err.error_code = GRPC_UNIMPLEMENTED;
		a->err.error_message = "no request, or one this server does not know";
		a->resp.message_response_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
		a->resp.error_response = &a->err;
		return 0;
	}
}

int reflect_answer(const struct reflect *r, const uint8_t *req, size_t reqlen, uint8_t **out, size_t *outlen)
{
	struct answer a = {
		.resp = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__INIT,
		.fdr = GRPC__REFLECTION__V1__FILE_DESCRIPTOR_RESPONSE__INIT,
		.enr = GRPC__REFLECTION__V1__EXTENSION_NUMBER_RESPONSE__INIT,
		.lsr = GRPC__REFLECTION__V1__LIST_SERVICE_RESPONSE__INIT,
		.err = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT,
	};
	Request *rq;
	size_t n;
	int rc;

	*out = NULL;
	*outlen = 0;
	if ((!req && reqlen) || reqlen > REQ_MAX)
		return -EINVAL;
	if (!req)
		req = (const uint8_t *)"";
	if (request_valid(req, reqlen, 1))
		return -EINVAL;
	rq = grpc__reflection__v1__server_reflection_request__unpack(NULL, reqlen, req);
	if (!rq)
		return -EINVAL; /* or out of memory: protobuf-c does not say which */
	a.resp.valid_host = rq->host;
	a.resp.original_request = rq;
	rc = answer_request(r, rq, &a);
	if (!rc) {
		n = grpc__reflection__v1__server_reflection_response__get_packed_size(&a.resp);
		*out = malloc(n ? n : 1);
		if (*out)
			*outlen = grpc__reflection__v1__server_reflection_response__pack(&a.resp, *out);
		else
			rc = -ENOMEM;
	}
	free(a.svc);
	free(a.svcp);
	free(a.numbers);
	free(a.fdr.file_descriptor_proto);
	grpc__reflection__v1__server_reflection_request__free_unpacked(rq, NULL);
	return rc;
}
