/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_reflect - gRPC server reflection, both of its inputs: the bytes as
 * a request to the real embedded set (a client's), and as a descriptor
 * set of their own (what the build embeds; a bad one must be refused,
 * not crash). An answer always parses as a response; a set indexed
 * answers too. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/reflection/v1/reflection.pb-c.h"
#include "grpc/reflect.h"

extern const unsigned char node_descriptors[];
extern const size_t node_descriptors_len;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Answer; -EINVAL or a response that parses and echoes a request. */
static void answer(const struct reflect *r, const uint8_t *req, size_t len, int must)
{
	Grpc__Reflection__V1__ServerReflectionResponse *resp;
	uint8_t *out = NULL;
	size_t outlen = 0;
	int rc = reflect_answer(r, req, len, &out, &outlen);
	if (rc) {
		if (rc != -EINVAL || must || out || outlen)
			abort();
		return;
	}
	resp = grpc__reflection__v1__server_reflection_response__unpack(NULL, outlen, out);
	free(out);
	if (!resp || !resp->original_request ||
	    resp->message_response_case == GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE__NOT_SET)
		abort();
	grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* list_services, file_containing_symbol "a", file_by_filename "a" */
	static const uint8_t asks[][5] = {{0x3a, 0x00}, {0x22, 0x01, 'a'}, {0x1a, 0x01, 'a'}};
	static const size_t ask_len[] = {2, 3, 3};
	static struct reflect *real;
	struct reflect *r = NULL;
	size_t i;
	int rc;

	if (!real && reflect_new(&real, node_descriptors, node_descriptors_len))
		abort();
	answer(real, data, size, 0);

	rc = reflect_new(&r, data, size);
	if (rc) {
		if (rc != -EINVAL || r)
			abort();
		return 0;
	}
	for (i = 0; i < sizeof asks / sizeof asks[0]; i++)
		answer(r, asks[i], ask_len[i], 1);
	reflect_free(r);
	return 0;
}
