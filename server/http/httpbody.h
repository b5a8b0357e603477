/* SPDX-License-Identifier: Apache-2.0 */
/* httpbody.h - what procctl-node's HTTP side reads out of a request, all
 * of it untrusted: a pid in a path, and a POST config body. Pure, and
 * fuzzed (fuzz_httpbody). */
#ifndef PROCCTL_NODE_HTTPBODY_H
#define PROCCTL_NODE_HTTPBODY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_MAX_JSON_DEPTH 16
#define HTTP_MAX_WAIT_MS 600000u

/* n bytes of a path component as a pid: digits only, no leading zero,
 * 1 .. INT_MAX ("01" is not pid 1). 0, or -EINVAL. */
int http_parse_pid(const char *s, size_t n, int32_t *pid);
/* Decode a URL's path or argument in place (libmicrohttpd's unescape
 * callback): %XX as its byte, except %00, which stays as it is, so no
 * C string the daemon reads is cut short ("/metrics%00" is no
 * "/metrics"). The new length. */
size_t http_unescape(char *s);

#define HTTP_KEY_MIN 16
#define HTTP_KEY_MAX 4096

/* The key in path (http_api_key_file): its first line (a final newline
 * dropped), HTTP_KEY_MIN to HTTP_KEY_MAX bytes of printable ASCII, from a
 * regular file others cannot read (mode o-r). 0 and key (NUL-terminated),
 * *len; or -errno and err. */
int http_key_load(const char *path, char *key, size_t cap, size_t *len, char *err, size_t errlen);
/* 1 when an Authorization header's value is "Bearer KEY" and KEY is key
 * (compared in time that does not depend on where they differ); else 0. */
int http_bearer_ok(const char *header, const char *key, size_t keylen);

/* A POST /v1/processes/{pid}/config body of n bytes: with a content type
 * of application/json, {"payload": base64 (standard or URL-safe, padding
 * optional), "waitMs": 0 .. 600000} and nothing nested deeper than
 * HTTP_MAX_JSON_DEPTH; with any other (or none), the payload's raw
 * bytes. wait_arg: the wait_ms query argument, or NULL (a JSON waitMs
 * wins). 0 with *payload (malloc'd, *len bytes; the caller frees it) and
 * *wait_ms; -EINVAL with why; -ENOMEM. */
int http_parse_config(const char *type, const char *body, size_t n, const char *wait_arg, uint8_t **payload,
		      size_t *len, uint32_t *wait_ms, char *why, size_t whylen);


#endif
