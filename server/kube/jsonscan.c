/* SPDX-License-Identifier: Apache-2.0 */
/* jsonscan.c - JSON's grammar, scanned (jsonscan.h). */
#include "jsonscan.h"

#include <errno.h>
#include <string.h>

static void blanks(struct jsonscan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' || *s->p == '\n'))
		s->p++;
}

int jsonscan_take(struct jsonscan *s, char c)
{
	blanks(s);
	if (s->p < s->end && *s->p == c)
		return s->p++, 1;
	return 0;
}

int jsonscan_end(struct jsonscan *s)
{
	blanks(s);
	return s->p == s->end;
}

static int digits(struct jsonscan *s)
{
	const char *at = s->p;
	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return s->p > at ? 0 : -EINVAL;
}

static int number(struct jsonscan *s)
{
	if (s->p < s->end && *s->p == '-')
		s->p++;
	if (s->p < s->end && *s->p == '0')
		s->p++;
	else if (digits(s) < 0)
		return -EINVAL;
	if (s->p < s->end && *s->p == '.' && (s->p++, digits(s) < 0))
		return -EINVAL;
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		return digits(s);
	}
	return 0;
}

static int hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* From its opening quote. */
static int string(struct jsonscan *s)
{
	int i;
	s->p++;
	while (s->p < s->end) {
		unsigned char c = (unsigned char)*s->p++;
		if (c == '"')
			return 0;
		if (c < 0x20)
			return -EINVAL;
		if (c != '\\')
			continue;
		if (s->p == s->end)
			return -EINVAL;
		c = (unsigned char)*s->p++;
		if (c == 'u') {
			for (i = 0; i < 4; i++)
				if (s->p == s->end || !hex(*s->p++))
					return -EINVAL;
		} else if (!c || !strchr("\"\\/bfnrt", c)) {
			return -EINVAL;
		}
	}
	return -EINVAL;
}

static int word(struct jsonscan *s, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n))
		return -EINVAL;
	s->p += n;
	return 0;
}

static int value(struct jsonscan *s, unsigned depth);

/* An object's or an array's members, from its opening bracket. */
static int members(struct jsonscan *s, unsigned depth)
{
	char close = *s->p == '{' ? '}' : ']';
	const char *key;
	size_t len;
	if (depth >= JSONSCAN_DEPTH_MAX)
		return -EINVAL;
	s->p++;
	if (jsonscan_take(s, close))
		return 0;
	do {
		if ((close == '}' && jsonscan_key(s, &key, &len) < 0) || value(s, depth + 1) < 0)
			return -EINVAL;
	} while (jsonscan_take(s, ','));
	return jsonscan_take(s, close) ? 0 : -EINVAL;
}

static int value(struct jsonscan *s, unsigned depth)
{
	blanks(s);
	if (s->p == s->end)
		return -EINVAL;
	s->values++;
	switch (*s->p) {
	case '"':
		return string(s);
	case '{':
	case '[':
		return members(s, depth);
	case 't':
		return word(s, "true");
	case 'f':
		return word(s, "false");
	case 'n':
		return word(s, "null");
	default:
		return number(s);
	}
}

int jsonscan_value(struct jsonscan *s, const char **at)
{
	blanks(s);
	*at = s->p;
	return value(s, 0);
}

int jsonscan_key(struct jsonscan *s, const char **key, size_t *len)
{
	blanks(s);
	if (s->p == s->end || *s->p != '"')
		return -EINVAL;
	*key = s->p + 1;
	if (string(s) < 0)
		return -EINVAL;
	*len = (size_t)(s->p - 1 - *key);
	return jsonscan_take(s, ':') ? 0 : -EINVAL;
}
