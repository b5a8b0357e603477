/* SPDX-License-Identifier: Apache-2.0 */
/* httpbody.c - what the HTTP side reads out of a request (httpbody.h). */
#include "httpbody.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <jansson.h>

#include "base64.h"

int http_parse_pid(const char *s, size_t n, int32_t *pid)
{
	long v = 0;
	size_t i;
	if (!n || n > 10 || s[0] == '0')
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > INT_MAX)
		return -1;
	*pid = (int32_t)v;
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

size_t http_unescape(char *s)
{
	char *w = s;
	const char *r = s;
	while (*r) {
		int hi, lo;
		if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 && (hi || lo)) {
			*w++ = (char)(hi << 4 | lo);
			r += 3;
		} else {
			*w++ = *r++;
		}
	}
	*w = 0;
	return (size_t)(w - s);
}

int http_key_load(const char *path, char *key, size_t cap, size_t *len, char *err, size_t errlen)
{
	struct stat st;
	ssize_t n;
	size_t i;
	int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC), r;
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "http_api_key_file %s: %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & S_IROTH)) {
		close(fd);
		snprintf(err, errlen, "http_api_key_file %s: not a regular file others cannot read (mode o-r)", path);
		return -EPERM;
	}
	n = read(fd, key, cap - 1);
	r = -errno;
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "http_api_key_file %s: %s", path, strerror(-r));
		return r;
	}
	for (i = 0; i < (size_t)n && key[i] != '\n'; i++)
		if (key[i] < 0x21 || key[i] > 0x7e)
			break;
	if ((i < (size_t)n && key[i] != '\n') || i < HTTP_KEY_MIN || i > HTTP_KEY_MAX) {
		snprintf(err, errlen, "http_api_key_file %s: the key is its first line, %d to %d printable bytes", path,
			 HTTP_KEY_MIN, HTTP_KEY_MAX);
		return -EINVAL;
	}
	key[i] = 0;
	*len = i;
	return 0;
}

int http_bearer_ok(const char *header, const char *key, size_t keylen)
{
	unsigned char diff = 0;
	size_t i, n;
	if (!header || strncmp(header, "Bearer ", 7))
		return 0;
	header += 7;
	n = strlen(header);
	for (i = 0; i < keylen; i++) /* every byte of the key, whatever the header is */
		diff |= (unsigned char)(key[i] ^ (i < n ? header[i] : 0));
	return !diff && n == keylen;
}

/* JSON nesting deeper than HTTP_MAX_JSON_DEPTH is refused before any
 * parser sees it. */
static int json_too_deep(const char *s, size_t n)
{
	int depth = 0, in_str = 0;
	size_t i;
	for (i = 0; i < n; i++) {
		char ch = s[i];
		if (in_str) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_str = 0;
		} else if (ch == '"') {
			in_str = 1;
		} else if (ch == '{' || ch == '[') {
			if (++depth > HTTP_MAX_JSON_DEPTH)
				return 1;
		} else if (ch == '}' || ch == ']') {
			depth--;
		}
	}
	return 0;
}

/* The wait of a config's JSON object j: "waitMs" or its proto field name
 * "wait_ms" (not both), a number or a decimal string (proto3 JSON writes
 * 64-bit integers as strings, and takes either), 0 to HTTP_MAX_WAIT_MS;
 * any field but these and "payload" is refused. 0 and *out, or -EINVAL. */
static int json_wait(json_t *j, uint32_t *out)
{
	json_t *w = json_object_get(j, "waitMs"), *w2 = json_object_get(j, "wait_ms");
	const char *key, *s;
	json_t *v;
	json_int_t x = 0;
	char *end;
	json_object_foreach(j, key, v)
		if (strcmp(key, "payload") && strcmp(key, "waitMs") && strcmp(key, "wait_ms"))
			return -EINVAL;
	if (w && w2)
		return -EINVAL;
	if (!w && !(w = w2))
		return 0;
	if (json_is_integer(w)) {
		x = json_integer_value(w);
	} else if (json_is_string(w) && *(s = json_string_value(w)) >= '0' && *s <= '9') {
		unsigned long long u = strtoull(s, &end, 10);
		if (*end || u > HTTP_MAX_WAIT_MS)
			return -EINVAL;
		x = (json_int_t)u;
	} else {
		return -EINVAL;
	}
	if (x < 0 || x > HTTP_MAX_WAIT_MS)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

int http_parse_config(const char *type, const char *body, size_t n, const char *wait_arg, uint8_t **payload,
		      size_t *len, uint32_t *wait_ms, char *why, size_t whylen)
{
	ssize_t got;
	size_t cap;
	*payload = NULL;
	*len = 0;
	*wait_ms = 0;
	if (wait_arg) {
		char *end;
		unsigned long v = strtoul(wait_arg, &end, 10);
		if (!*wait_arg || *end || *wait_arg == '-' || v > HTTP_MAX_WAIT_MS) {
			snprintf(why, whylen, "wait_ms: 0 to %u", HTTP_MAX_WAIT_MS);
			return -EINVAL;
		}
		*wait_ms = (uint32_t)v;
	}
	if (type && !strncmp(type, "application/json", 16)) {
		json_error_t je;
		json_t *j, *p;
		if (json_too_deep(body, n)) {
			snprintf(why, whylen, "JSON nested too deep (over %d)", HTTP_MAX_JSON_DEPTH);
			return -EINVAL;
		}
		if (!(j = json_loadb(body ? body : "", n, JSON_REJECT_DUPLICATES, &je))) {
			snprintf(why, whylen, "not JSON: %s (line %d)", je.text, je.line);
			return -EINVAL;
		}
		p = json_object_get(j, "payload");
		if (!json_is_object(j) || !json_is_string(p) || json_wait(j, wait_ms) < 0) {
			json_decref(j);
			snprintf(why, whylen, "expected {\"payload\": a base64 string, \"waitMs\" (or \"wait_ms\"): 0 to %u}, "
				 "and no other field", HTTP_MAX_WAIT_MS);
			return -EINVAL;
		}
		cap = json_string_length(p) / 4 * 3 + 3;
		if (!(*payload = malloc(cap))) {
			json_decref(j);
			snprintf(why, whylen, "out of memory");
			return -ENOMEM;
		}
		got = base64_decode(json_string_value(p), json_string_length(p), *payload, cap);
		json_decref(j);
		if (got < 0) {
			free(*payload);
			*payload = NULL;
			snprintf(why, whylen, "payload: not base64");
			return -EINVAL;
		}
		*len = (size_t)got;
		return 0;
	}
	if (!(*payload = malloc(n ? n : 1))) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (n)
		memcpy(*payload, body, n);
	*len = n;
	return 0;
}
