/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC server reflection: the real embedded descriptor set answered the
 * way grpcurl asks, small sets written here for imports, nesting and
 * extensions, and sets and requests that must be refused. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/reflection/v1/reflection.pb-c.h"
#include "grpc/reflect.h"
#include "th.h"

extern const unsigned char node_descriptors[];
extern const size_t node_descriptors_len;

typedef Grpc__Reflection__V1__ServerReflectionRequest Request;
typedef Grpc__Reflection__V1__ServerReflectionResponse Response;

#define NODE_PROTO "procctl/v1/node.proto"
#define HEALTH_PROTO "grpc/health/v1/health.proto"
#define REFLECT_PROTO "grpc/reflection/v1/reflection.proto"
#define ALPHA_PROTO "grpc/reflection/v1alpha/reflection.proto"

/* ---- a protobuf writer, for sets of our own ---- */

struct w {
	uint8_t b[8192];
	size_t n;
};

static void w_varint(struct w *w, uint64_t v)
{
	do {
		assert_true(w->n < sizeof w->b);
		w->b[w->n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void w_bytes(struct w *w, unsigned field, const void *p, size_t n)
{
	w_varint(w, (uint64_t)field << 3 | 2);
	w_varint(w, n);
	assert_true(n <= sizeof w->b - w->n);
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void w_str(struct w *w, unsigned field, const char *s)
{
	w_bytes(w, field, s, strlen(s));
}

static void w_msg(struct w *w, unsigned field, const struct w *sub)
{
	w_bytes(w, field, sub->b, sub->n);
}

/* A message holding only a name: a field, an enum value, a method. */
static void w_named(struct w *w, unsigned field, const char *name)
{
	struct w n = {.n = 0};
	w_str(&n, 1, name);
	w_msg(w, field, &n);
}

/* ---- a protobuf reader, for what comes back ---- */

static int r_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	unsigned s;
	*v = 0;
	for (s = 0; s < 64 && *p < end; s += 7) {
		uint8_t c = *(*p)++;
		*v |= (uint64_t)(c & 0x7f) << s;
		if (!(c & 0x80))
			return 0;
	}
	return -1;
}

/* A FileDescriptorProto's name (field 1), or "" when it does not parse. */
static const char *fd_name(const uint8_t *p, size_t n)
{
	static char name[512];
	const uint8_t *end = p + n;
	uint64_t tag, v;
	name[0] = 0;
	while (p < end) {
		if (r_varint(&p, end, &tag))
			return "";
		switch (tag & 7) {
		case 0:
			if (r_varint(&p, end, &v))
				return "";
			break;
		case 1:
		case 5:
			if ((size_t)(end - p) < ((tag & 7) == 1 ? 8u : 4u))
				return "";
			p += (tag & 7) == 1 ? 8 : 4;
			break;
		case 2:
			if (r_varint(&p, end, &v) || v > (uint64_t)(end - p))
				return "";
			if (tag >> 3 == 1 && v < sizeof name) {
				memcpy(name, p, v);
				name[v] = 0;
			}
			p += v;
			break;
		default:
			return "";
		}
	}
	return name;
}

/* ---- asking ---- */

static struct reflect *index_of(const void *set, size_t len)
{
	struct reflect *r = NULL;
	assert_int_equal(reflect_new(&r, set, len), 0);
	assert_non_null(r);
	return r;
}

static struct reflect *real(void)
{
	return index_of(node_descriptors, node_descriptors_len);
}

/* Ask; the answer must echo the host and the request. */
static Response *ask(const struct reflect *r, Request *rq)
{
	uint8_t req[4096], *out;
	size_t n = grpc__reflection__v1__server_reflection_request__get_packed_size(rq), outlen;
	Response *resp;
	assert_true(n <= sizeof req);
	grpc__reflection__v1__server_reflection_request__pack(rq, req);
	assert_int_equal(reflect_answer(r, req, n, &out, &outlen), 0);
	resp = grpc__reflection__v1__server_reflection_response__unpack(NULL, outlen, out);
	free(out);
	assert_non_null(resp);
	assert_string_equal(resp->valid_host, rq->host);
	assert_non_null(resp->original_request);
	assert_string_equal(resp->original_request->host, rq->host);
	assert_int_equal(resp->original_request->message_request_case, rq->message_request_case);
	return resp;
}

static Response *ask_str(const struct reflect *r, int kind, const char *s)
{
	Request rq = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__INIT;
	Response *resp;
	rq.host = "localhost:50051";
	rq.message_request_case = kind;
	rq.file_by_filename = (char *)s; /* the oneof's strings share one place */
	resp = ask(r, &rq);
	assert_string_equal(resp->original_request->file_by_filename, s);
	return resp;
}

#define K_FILE GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME
#define K_SYMBOL GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL
#define K_EXT_NUMBERS GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE
#define K_LIST GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES
#define R_FILES GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE
#define R_EXT_NUMBERS GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE
#define R_LIST GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE
#define R_ERROR GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE

static Response *ext_request(const struct reflect *r, const char *type, int32_t number)
{
	Request rq = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__INIT;
	Grpc__Reflection__V1__ExtensionRequest er = GRPC__REFLECTION__V1__EXTENSION_REQUEST__INIT;
	er.containing_type = (char *)type;
	er.extension_number = number;
	rq.message_request_case = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION;
	rq.file_containing_extension = &er;
	return ask(r, &rq);
}

/* The answer is exactly these files, in this order (NULL-terminated),
 * each a FileDescriptorProto that names itself; from the real set, each
 * is a slice of it. */
static void expect_files(Response *resp, const char *const *names, const void *set, size_t setlen)
{
	size_t i, n = 0;
	assert_int_equal(resp->message_response_case, R_FILES);
	while (names[n])
		n++;
	assert_int_equal(resp->file_descriptor_response->n_file_descriptor_proto, n);
	for (i = 0; i < n; i++) {
		const ProtobufCBinaryData *fd = &resp->file_descriptor_response->file_descriptor_proto[i];
		assert_string_equal(fd_name(fd->data, fd->len), names[i]);
		assert_non_null(memmem(set, setlen, fd->data, fd->len));
	}
	grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);
}

static void expect_error(Response *resp, int code, const char *needle)
{
	assert_int_equal(resp->message_response_case, R_ERROR);
	assert_int_equal(resp->error_response->error_code, code);
	if (needle)
		assert_non_null(strstr(resp->error_response->error_message, needle));
	grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);
}

/* ---- the real set ---- */

static void list_services(void **state)
{
	static const char *const want[] = {"procctl.v1.NodeService", "grpc.health.v1.Health",
					   "grpc.reflection.v1.ServerReflection",
					   "grpc.reflection.v1alpha.ServerReflection"};
	struct reflect *r = real();
	Response *resp = ask_str(r, K_LIST, "*");
	size_t i;
	(void)state;
	assert_int_equal(resp->message_response_case, R_LIST);
	assert_int_equal(resp->list_services_response->n_service, 4);
	for (i = 0; i < 4; i++)
		assert_string_equal(resp->list_services_response->service[i]->name, want[i]);
	grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);
	reflect_free(r);
}

static void symbols(void **state)
{
	static const struct {
		const char *symbol, *file;
	} cases[] = {
		{"procctl.v1.NodeService", NODE_PROTO},
		{"procctl.v1.NodeService.Publish", NODE_PROTO},
		{"procctl.v1.Process", NODE_PROTO},
		{".procctl.v1.Process", NODE_PROTO},
		{"procctl.v1.ProcessRef.pid", NODE_PROTO},
		{"procctl.v1.AckResult", NODE_PROTO},
		{"procctl.v1.ACK_RESULT_APPLIED", NODE_PROTO},
		{"grpc.health.v1.Health", HEALTH_PROTO},
		{"grpc.health.v1.Health.Watch", HEALTH_PROTO},
		{"grpc.health.v1.HealthCheckResponse.ServingStatus", HEALTH_PROTO},
		{"grpc.health.v1.HealthCheckResponse.SERVING", HEALTH_PROTO},
		{"grpc.health.v1.HealthCheckResponse.status", HEALTH_PROTO},
		{"grpc.reflection.v1.ServerReflection.ServerReflectionInfo", REFLECT_PROTO},
		{"grpc.reflection.v1.ServerReflectionRequest.message_request", REFLECT_PROTO}, /* a oneof */
		{"grpc.reflection.v1alpha.ServerReflectionResponse", ALPHA_PROTO},
		{"grpc.reflection.v1alpha.ExtensionRequest.extension_number", ALPHA_PROTO},
	};
	struct reflect *r = real();
	size_t i;
	(void)state;
	/* none of these files imports another */
	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *want[] = {cases[i].file, NULL};
		print_message("%-58s %s\n", cases[i].symbol, cases[i].file);
		expect_files(ask_str(r, K_SYMBOL, cases[i].symbol), want, node_descriptors, node_descriptors_len);
	}
	reflect_free(r);
}

static void files(void **state)
{
	const char *const node[] = {NODE_PROTO, NULL}, *const health[] = {HEALTH_PROTO, NULL},
			  *const alpha[] = {ALPHA_PROTO, NULL};
	struct reflect *r = real();
	(void)state;
	expect_files(ask_str(r, K_FILE, NODE_PROTO), node, node_descriptors, node_descriptors_len);
	expect_files(ask_str(r, K_FILE, HEALTH_PROTO), health, node_descriptors, node_descriptors_len);
	expect_files(ask_str(r, K_FILE, ALPHA_PROTO), alpha, node_descriptors, node_descriptors_len);
	expect_error(ask_str(r, K_FILE, "procctl/v1/nope.proto"), 5, "procctl/v1/nope.proto");
	expect_error(ask_str(r, K_FILE, "/" NODE_PROTO), 5, NULL);
	reflect_free(r);
}

static void not_found(void **state)
{
	static const char *const unknown[] = {
		"procctl.v1.Nope", "procctl.v1.NodeService.Nope", "procctl.v1.NodeService.", "procctl.v1", "",
		".", "..procctl.v1.Process", "procctl.v1.Process.pid", /* Process has no pid: ProcessRef does */
	};
	struct reflect *r = real();
	char longname[3000];
	Response *resp;
	size_t i;
	(void)state;
	for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
		expect_error(ask_str(r, K_SYMBOL, unknown[i]), 5, unknown[i]);
	/* a long name comes back cut short, in printable ASCII */
	memset(longname, 'x', sizeof longname - 1);
	longname[sizeof longname - 1] = 0;
	longname[5] = '\x01';
	resp = ask_str(r, K_SYMBOL, longname);
	assert_int_equal(resp->message_response_case, R_ERROR);
	assert_true(strlen(resp->error_response->error_message) < 300);
	assert_non_null(strstr(resp->error_response->error_message, "xxxxx?xxx"));
	grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);

	/* no extensions here; a known message has none, anything else is unknown */
	expect_error(ext_request(r, "procctl.v1.Process", 100), 5, "procctl.v1.Process");
	expect_error(ext_request(r, "procctl.v1.Nope", 1), 5, NULL);
	resp = ask_str(r, K_EXT_NUMBERS, ".procctl.v1.Process");
	assert_int_equal(resp->message_response_case, R_EXT_NUMBERS);
	assert_string_equal(resp->all_extension_numbers_response->base_type_name, "procctl.v1.Process");
	assert_int_equal(resp->all_extension_numbers_response->n_extension_number, 0);
	grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);
	expect_error(ask_str(r, K_EXT_NUMBERS, "procctl.v1.Nope"), 5, NULL);
	expect_error(ask_str(r, K_EXT_NUMBERS, "procctl.v1.NodeService"), 5, NULL); /* not a message */
	expect_error(ask_str(r, K_EXT_NUMBERS, "procctl.v1.AckResult"), 5, NULL);
	reflect_free(r);
}

/* No request at all, and one newer than we know: UNIMPLEMENTED. */
static void unimplemented(void **state)
{
	static const uint8_t future[] = {0x0a, 0x01, 'h', 0x42, 0x01, 'x'}; /* host "h", field 8 */
	Request rq = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__INIT;
	struct reflect *r = real();
	Response *resp;
	uint8_t *out;
	size_t outlen;
	(void)state;
	rq.host = "node-1";
	expect_error(ask(r, &rq), 12, NULL);
	assert_int_equal(reflect_answer(r, future, sizeof future, &out, &outlen), 0);
	resp = grpc__reflection__v1__server_reflection_response__unpack(NULL, outlen, out);
	free(out);
	assert_non_null(resp);
	assert_string_equal(resp->valid_host, "h");
	expect_error(resp, 12, NULL);
	assert_int_equal(reflect_answer(r, NULL, 0, &out, &outlen), 0); /* an empty request */
	resp = grpc__reflection__v1__server_reflection_response__unpack(NULL, outlen, out);
	free(out);
	assert_non_null(resp);
	expect_error(resp, 12, NULL);
	reflect_free(r);
}

/* Bytes that are no request: -EINVAL, nothing out. */
static void garbage(void **state)
{
	static const struct {
		const char *b;
		size_t n;
	} bad[] = {
		{"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11}, /* a tag past 64 bits */
		{"\x1a\x05" "ab", 4},                                 /* a length past the end */
		{"\x1a", 1},                                          /* no length */
		{"\x0b\x0c", 2},                                      /* a group */
		{"\x0f", 1},                                          /* wire type 7 */
		{"\x00\x00", 2},                                      /* field 0 */
		{"\x58\x00\x80\x00\x21", 5},                          /* field 0, spelled long */
		{"\x2a\x02\x00\x00", 4},                              /* field 0 in an extension request */
		{"\x2a\x03\x08\x01", 4},                              /* an extension request cut short */
	};
	static uint8_t big[(64 << 10) + 1];
	struct reflect *r = real();
	uint8_t *out = (uint8_t *)"x";
	size_t i, outlen = 7;
	(void)state;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(reflect_answer(r, (const uint8_t *)bad[i].b, bad[i].n, &out, &outlen), -EINVAL);
		assert_null(out);
		assert_int_equal(outlen, 0);
	}
	/* a well-formed request over the bound: list_services "xxx..." */
	memset(big, 'x', sizeof big);
	big[0] = 0x3a;
	big[1] = 0xfc, big[2] = 0xff, big[3] = 0x03; /* 65532 */
	assert_int_equal(reflect_answer(r, big, sizeof big, &out, &outlen), -EINVAL);
	assert_int_equal(reflect_answer(r, big, 65536, &out, &outlen), 0);
	free(out);
	reflect_free(r);
}

/* ---- sets of our own ---- */

static void message_with(struct w *m, const char *name, const struct w *nested, const char *field)
{
	m->n = 0;
	w_str(m, 1, name);
	if (field)
		w_named(m, 2, field);
	if (nested)
		w_msg(m, 3, nested);
}

static void add_file(struct w *set, const char *name, const char *pkg, const char *const *deps, const struct w *body)
{
	struct w f = {.n = 0};
	w_str(&f, 1, name);
	if (pkg)
		w_str(&f, 2, pkg);
	while (deps && *deps)
		w_str(&f, 3, *deps++);
	if (body) {
		assert_true(body->n <= sizeof f.b - f.n);
		memcpy(f.b + f.n, body->b, body->n);
		f.n += body->n;
	}
	w_msg(set, 1, &f);
}

/* c.proto: message Base { id }, extend Base { ext_tag = 100 }, and a
 * message-scoped extension; b.proto imports c: B.Inner.Kind { K_A };
 * a.proto imports b and c: service S { M }; top.proto has no package. */
static void build_deps(struct w *set)
{
	static const char *const a_deps[] = {"b.proto", "c.proto", NULL}, *const b_deps[] = {"c.proto", NULL};
	struct w body = {.n = 0}, m = {.n = 0}, e = {.n = 0}, inner = {.n = 0}, x = {.n = 0};

	set->n = 0;
	message_with(&m, "Base", NULL, "id");
	w_msg(&body, 4, &m);
	w_str(&x, 1, "ext_tag");
	w_str(&x, 2, ".c.Base");
	w_varint(&x, 3 << 3 | 0);
	w_varint(&x, 100);
	w_msg(&body, 7, &x);
	m.n = 0;
	w_str(&m, 1, "Holder");
	x.n = 0;
	w_str(&x, 1, "held");
	w_str(&x, 2, "c.Base"); /* relative: read as full */
	w_varint(&x, 3 << 3 | 0);
	w_varint(&x, 200);
	w_msg(&m, 6, &x);
	w_msg(&body, 4, &m);
	add_file(set, "c.proto", "c", NULL, &body);

	body.n = 0;
	e.n = 0;
	w_str(&e, 1, "Kind");
	w_named(&e, 2, "K_A");
	w_named(&e, 2, "K_B");
	message_with(&inner, "Inner", NULL, "v");
	w_msg(&inner, 4, &e);
	message_with(&m, "B", &inner, "inner");
	w_msg(&body, 4, &m);
	add_file(set, "b.proto", "b", b_deps, &body);

	body.n = 0;
	m.n = 0;
	w_str(&m, 1, "S");
	w_named(&m, 2, "M");
	w_msg(&body, 6, &m);
	add_file(set, "a.proto", "a.x", a_deps, &body);

	body.n = 0;
	message_with(&m, "Top", NULL, "f");
	w_msg(&body, 4, &m);
	add_file(set, "top.proto", NULL, NULL, &body);
}

static void imports(void **state)
{
	static const char *const abc[] = {"a.proto", "b.proto", "c.proto", NULL}, *const bc[] = {"b.proto", "c.proto", NULL},
				 *const c[] = {"c.proto", NULL}, *const top[] = {"top.proto", NULL};
	struct w set;
	struct reflect *r;
	Response *resp;
	(void)state;
	build_deps(&set);
	r = index_of(set.b, set.n);
	expect_files(ask_str(r, K_FILE, "a.proto"), abc, set.b, set.n); /* c once */
	expect_files(ask_str(r, K_FILE, "b.proto"), bc, set.b, set.n);
	expect_files(ask_str(r, K_FILE, "c.proto"), c, set.b, set.n);
	expect_files(ask_str(r, K_SYMBOL, "a.x.S.M"), abc, set.b, set.n);
	expect_files(ask_str(r, K_SYMBOL, "b.B.Inner"), bc, set.b, set.n);
	expect_files(ask_str(r, K_SYMBOL, "b.B.Inner.v"), bc, set.b, set.n);
	expect_files(ask_str(r, K_SYMBOL, "b.B.Inner.Kind"), bc, set.b, set.n);
	expect_files(ask_str(r, K_SYMBOL, "b.B.Inner.K_B"), bc, set.b, set.n); /* the enum's sibling */
	expect_files(ask_str(r, K_SYMBOL, "c.ext_tag"), c, set.b, set.n);
	expect_files(ask_str(r, K_SYMBOL, "c.Holder.held"), c, set.b, set.n);
	expect_files(ask_str(r, K_SYMBOL, "Top.f"), top, set.b, set.n);
	expect_error(ask_str(r, K_SYMBOL, "b.B.Inner.Kind.K_A"), 5, NULL);
	expect_error(ask_str(r, K_SYMBOL, "a.x"), 5, NULL);

	expect_files(ext_request(r, ".c.Base", 100), c, set.b, set.n);
	expect_files(ext_request(r, "c.Base", 200), c, set.b, set.n);
	expect_error(ext_request(r, "c.Base", 101), 5, "extension 101 of \"c.Base\"");
	resp = ask_str(r, K_EXT_NUMBERS, "c.Base");
	assert_int_equal(resp->message_response_case, R_EXT_NUMBERS);
	assert_string_equal(resp->all_extension_numbers_response->base_type_name, "c.Base");
	assert_int_equal(resp->all_extension_numbers_response->n_extension_number, 2);
	assert_int_equal(resp->all_extension_numbers_response->extension_number[0], 100);
	assert_int_equal(resp->all_extension_numbers_response->extension_number[1], 200);
	grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);

	resp = ask_str(r, K_LIST, "");
	assert_int_equal(resp->list_services_response->n_service, 1);
	assert_string_equal(resp->list_services_response->service[0]->name, "a.x.S");
	grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);
	reflect_free(r);
}

/* Files that import each other (protoc refuses them): answered, once each. */
static void cycle(void **state)
{
	static const char *const xd[] = {"y.proto", NULL}, *const yd[] = {"x.proto", "y.proto", NULL};
	static const char *const xy[] = {"x.proto", "y.proto", NULL}, *const yx[] = {"y.proto", "x.proto", NULL};
	struct w set = {.n = 0};
	struct reflect *r;
	(void)state;
	add_file(&set, "x.proto", "p", xd, NULL);
	add_file(&set, "y.proto", "p", yd, NULL);
	r = index_of(set.b, set.n);
	expect_files(ask_str(r, K_FILE, "x.proto"), xy, set.b, set.n);
	expect_files(ask_str(r, K_FILE, "y.proto"), yx, set.b, set.n);
	reflect_free(r);
}

/* An empty set is a set: nothing in it. */
static void empty(void **state)
{
	struct reflect *r = index_of(NULL, 0);
	Response *resp = ask_str(r, K_LIST, "");
	(void)state;
	assert_int_equal(resp->message_response_case, R_LIST);
	assert_int_equal(resp->list_services_response->n_service, 0);
	grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);
	expect_error(ask_str(r, K_SYMBOL, "a"), 5, NULL);
	expect_error(ask_str(r, K_FILE, "a.proto"), 5, NULL);
	reflect_free(r);
}

/* Messages nested n deep in one file. */
static void nest(struct w *set, unsigned n)
{
	static struct w a, b;
	struct w *in = &a, *out = &b, *t;
	char name[16];
	unsigned i;
	in->n = 0;
	w_str(in, 1, "M0");
	for (i = 1; i < n; i++) {
		snprintf(name, sizeof name, "M%u", i);
		message_with(out, name, in, NULL);
		t = in, in = out, out = t;
	}
	out->n = 0;
	w_msg(out, 4, in);
	set->n = 0;
	add_file(set, "deep.proto", "d", NULL, out);
}

static int new_rc(const void *set, size_t len)
{
	struct reflect *r = (struct reflect *)1;
	int rc = reflect_new(&r, set, len);
	if (rc)
		assert_null(r);
	reflect_free(r);
	return rc;
}

static void refused(void **state)
{
	static const char *const missing[] = {"gone.proto", NULL};
	static uint8_t buf[16384];
	struct w set, body;
	size_t n = node_descriptors_len;
	(void)state;
	assert_true(n <= sizeof buf);

	/* the real set cut short, and with a length past its end */
	assert_int_equal(new_rc(node_descriptors, n - 1), -EINVAL);
	assert_int_equal(new_rc(node_descriptors, n / 2), -EINVAL);
	assert_int_equal(new_rc(node_descriptors, 1), -EINVAL);
	memcpy(buf, node_descriptors, n);
	assert_int_equal(buf[0], 0x0a); /* file=1, length-delimited */
	buf[1] = 0xff, buf[2] = 0xff, buf[3] = 0x7f;
	assert_int_equal(new_rc(buf, n), -EINVAL);
	memcpy(buf, node_descriptors, n);
	buf[0] = 0x0b; /* a group */
	assert_int_equal(new_rc(buf, n), -EINVAL);
	memcpy(buf, node_descriptors, n);
	memset(buf + n, 0xff, 11); /* a varint past 64 bits after the last file */
	assert_int_equal(new_rc(buf, n + 11), -EINVAL);
	assert_int_equal(new_rc(node_descriptors, n), 0);

	/* 32 messages deep is fine, 33 is not */
	nest(&set, 32);
	assert_int_equal(new_rc(set.b, set.n), 0);
	nest(&set, 33);
	assert_int_equal(new_rc(set.b, set.n), -EINVAL);

	/* an import not in the set, a file twice, a symbol twice */
	set.n = 0;
	add_file(&set, "a.proto", "p", missing, NULL);
	assert_int_equal(new_rc(set.b, set.n), -EINVAL);
	set.n = 0;
	add_file(&set, "a.proto", "p", NULL, NULL);
	add_file(&set, "a.proto", "q", NULL, NULL);
	assert_int_equal(new_rc(set.b, set.n), -EINVAL);
	body.n = 0;
	w_named(&body, 4, "M");
	set.n = 0;
	add_file(&set, "a.proto", "p", NULL, &body);
	add_file(&set, "b.proto", "p", NULL, &body);
	assert_int_equal(new_rc(set.b, set.n), -EINVAL);
	body.n = 0;
	w_named(&body, 4, "M");
	w_named(&body, 5, "M"); /* an enum of the message's name */
	set.n = 0;
	add_file(&set, "a.proto", "p", NULL, &body);
	assert_int_equal(new_rc(set.b, set.n), -EINVAL);

	/* names: none, empty, not identifiers, of the wrong wire type */
	set.n = 0;
	add_file(&set, "", "p", NULL, NULL);
	assert_int_equal(new_rc(set.b, set.n), -EINVAL);
	set.n = 0;
	add_file(&set, "a.proto", "p..q", NULL, NULL);
	assert_int_equal(new_rc(set.b, set.n), -EINVAL);
	body.n = 0;
	w_named(&body, 4, "A.B");
	set.n = 0;
	add_file(&set, "a.proto", "p", NULL, &body);
	assert_int_equal(new_rc(set.b, set.n), -EINVAL);
	body.n = 0;
	w_named(&body, 6, "");
	set.n = 0;
	add_file(&set, "a.proto", "p", NULL, &body);
	assert_int_equal(new_rc(set.b, set.n), -EINVAL);
	body.n = 0;
	w_varint(&body, 4 << 3 | 0); /* message_type as a varint */
	w_varint(&body, 1);
	set.n = 0;
	add_file(&set, "a.proto", "p", NULL, &body);
	assert_int_equal(new_rc(set.b, set.n), -EINVAL);
}

/* The real set with bytes overwritten, cut, or a run duplicated: refused
 * or indexed, and whatever is indexed answers. */
static void mutations(void **state)
{
	static uint8_t buf[32768];
	static const char *const asks[] = {"procctl.v1.NodeService", "grpc.health.v1.HealthCheckResponse.SERVING"};
	uint64_t x = 0x2545f4914f6cdd1dull;
	size_t n0 = node_descriptors_len;
	unsigned i, ok = 0;
	(void)state;
	assert_true(2 * n0 <= sizeof buf);
	for (i = 0; i < 4000; i++) {
		struct reflect *r = NULL;
		size_t n = n0, k, j;
		int rc;
		memcpy(buf, node_descriptors, n0);
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		switch (x % 4) {
		case 0: /* cut */
			n = (size_t)(x >> 8) % n0;
			break;
		case 1: /* a run repeated */
			j = (size_t)(x >> 8) % n0;
			k = (size_t)(x >> 24) % 64;
			if (j + k > n0)
				k = n0 - j;
			memmove(buf + j + k, buf + j, n0 - j);
			n = n0 + k;
			break;
		default: /* 1-8 bytes overwritten */
			for (k = 0; k <= (x >> 8) % 8; k++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				buf[(x >> 8) % n0] = (uint8_t)((x & 1) ? x >> 40 : (x >> 40) & 7);
			}
		}
		rc = reflect_new(&r, buf, n);
		if (rc) {
			assert_int_equal(rc, -EINVAL);
			continue;
		}
		ok++;
		for (k = 0; k < 3; k++) {
			Request rq = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__INIT;
			uint8_t req[256], *out;
			size_t outlen;
			Response *resp;
			rq.message_request_case = k == 2 ? K_LIST : K_SYMBOL;
			rq.file_containing_symbol = k == 2 ? "" : (char *)asks[k];
			assert_int_equal(reflect_answer(r, req, grpc__reflection__v1__server_reflection_request__pack(&rq, req),
							&out, &outlen),
					 0);
			resp = grpc__reflection__v1__server_reflection_response__unpack(NULL, outlen, out);
			assert_non_null(resp);
			if (resp->message_response_case == R_FILES)
				for (j = 0; j < resp->file_descriptor_response->n_file_descriptor_proto; j++)
					assert_non_null(memmem(buf, n, resp->file_descriptor_response->file_descriptor_proto[j].data,
							       resp->file_descriptor_response->file_descriptor_proto[j].len));
			grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);
			free(out);
		}
		reflect_free(r);
	}
	print_message("4000 mutations: %u indexed, %u refused\n", ok, 4000 - ok);
	assert_true(ok > 0 && ok < 4000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(list_services),
		cmocka_unit_test(symbols),
		cmocka_unit_test(files),
		cmocka_unit_test(not_found),
		cmocka_unit_test(unimplemented),
		cmocka_unit_test(garbage),
		cmocka_unit_test(imports),
		cmocka_unit_test(cycle),
		cmocka_unit_test(empty),
		cmocka_unit_test(refused),
		cmocka_unit_test(mutations),
	};
	return TH_RUN(tests);
}
