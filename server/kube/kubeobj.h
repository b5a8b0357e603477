/* SPDX-License-Identifier: Apache-2.0 */
/* kubeobj.h - what the Kubernetes API server sends of any kind of object:
 * a watch's lines ({"type", "object"}) and a list's pages ({"kind",
 * "metadata", "items"}), checked and bounded, each object handed to its
 * kind's parser (podmeta.h's Pods); and the checks of the fields every
 * kind shares. The API server is a peer like any: a document is parsed
 * with its NULs (JSON_ALLOW_NUL), so that one in a string the daemon
 * does not read costs nothing, and one in a string it reads (kube_text,
 * kube_field) refuses that object alone. */
#ifndef PROCCTL_NODE_KUBEOBJ_H
#define PROCCTL_NODE_KUBEOBJ_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define KUBE_RV_MAX 64 /* resourceVersion: opaque, printable */

/* The JSON values one object (a Pod, a watch event) may hold: a tree
 * costs tens of bytes a value, and no Pod has nearly so many (32
 * containers of 200 variables, and their managedFields, hold 40,000). */
#define KUBE_VALUES_MAX 100000

#define KUBE_CONTINUE_MAX 4096

/* A kind of object, as a list or a watch gives it. */
struct kube_kind {
	const char *list;   /* its list's kind: "PodList" */
	const char *plural; /* its resource's: "pods" */
	size_t size;      /* the struct parse fills */
	/* obj into out (size bytes): 0, or -EINVAL and why in err (the field
	 * at fault, its value escaped). k: this kind, ctx with it. */
	int (*parse)(const struct kube_kind *k, const json_t *obj, void *out, char *err, size_t errlen);
	/* The resourceVersion of what parse filled. */
	const char *(*rv)(const void *out);
	/* The object of a line kube_event_parse refused, when who it is can
	 * be told: 0 and out holding that alone (what a DELETED needs: it is
	 * forgotten), or -EINVAL. */
	int (*forget)(const char *line, size_t len, void *out);
	/* A copy of what parse filled, in as few bytes as it needs (malloc'd:
	 * free() frees it), or NULL. */
	void *(*dup)(const void *obj);
	const void *ctx; /* the parse's (a ProcessConfig's: this node's name) */
	/* A kind whose objects a list bounds by group and cost (kube_budget;
	 * NULL: only by count): the group of what parse filled (its
	 * namespace), what keeping it costs (its payload's bytes), and slim,
	 * which keeps it without what costs, saying why. */
	const char *(*group)(const void *obj);
	size_t (*cost)(const void *obj);
	void (*slim)(void *obj, const char *why);
};

/* What a list keeps, for a kind with group: at most group_max objects
 * of a group and cost_max in all, in the list's order; an object past
 * either is slimmed (the kind's slim: kept, to say why), up to
 * group_max of a group; past that it is dropped (counted), so that one
 * group's objects cannot take every other's room. */
struct kube_budget {
	const struct kube_kind *k;
	uint32_t group_max;
	size_t cost_max, cost;
	const char *group_key, *cost_key; /* what names the bounds in why (a config key) */
	struct kube_group {
		char name[64];
		uint32_t n, slim; /* kept whole, slimmed */
	} *v;
	size_t n, cap;
	int nomem; /* a group could not be counted: its object slimmed */
};

/* Count obj (the kind's, parse's) against b: KUBE_KEEP (a kind without
 * group: always), KUBE_SLIM (obj slimmed), or KUBE_DROP. */
enum kube_verdict { KUBE_KEEP, KUBE_SLIM, KUBE_DROP };
enum kube_verdict kube_budget_take(struct kube_budget *b, void *obj);
/* Count nothing more (a list begun again): the groups stay allocated. */
void kube_budget_reset(struct kube_budget *b);
void kube_budget_free(struct kube_budget *b);

/* One line of a watch (?watch=1). */
enum kube_event_type { KUBE_ADDED, KUBE_MODIFIED, KUBE_DELETED, KUBE_BOOKMARK, KUBE_ERROR };
struct kube_event {
	enum kube_event_type type;
	void *obj;                   /* the caller's (the kind's size): ADDED, MODIFIED, DELETED's object */
	char rv[KUBE_RV_MAX + 1];    /* BOOKMARK's, and the object's */
	int code;                    /* ERROR: the Status's code (410: the version is gone, list again) */
	char reason[64];             /* ERROR: its reason, printable */
};

/* The len bytes of one line of a watch of k's objects: 0 and ev, or
 * -EINVAL and why in err. */
int kube_event_parse(const struct kube_kind *k, const char *line, size_t len, struct kube_event *ev, char *err,
		     size_t errlen);

/* One page of a list (?limit=N). */
struct kube_page {
	char rv[KUBE_RV_MAX + 1];          /* the list's resourceVersion: where a watch resumes */
	char cont[KUBE_CONTINUE_MAX + 1]; /* the next page's token; "": the last page */
	size_t items;                      /* objects given to item */
	size_t rejected;                   /* items the kind's parse refused */
	char rejected_why[256];            /* the first's reason */
};

/* The len bytes of a page of a list of k's objects: item(arg, obj) for
 * each that parses, into obj (k->size bytes, the caller's; the others
 * are counted in pg, and skipped: one bad object does not hide the
 * others); 0, or -EINVAL and why in err (no list of k, or a bad
 * resourceVersion or continue token). The page is scanned, and its
 * parts parsed one at a time (jsonscan.h): what it costs is one item's
 * tree, an item being at most item_bytes_max bytes and KUBE_VALUES_MAX
 * values (a larger one is counted as rejected, not parsed). */
int kube_list_parse(const struct kube_kind *k, void *obj, const char *buf, size_t len, size_t item_bytes_max,
		    struct kube_page *pg, void (*item)(void *arg, const void *obj), void *arg, char *err, size_t errlen);

/* 1 when the JSON text is a value of more than KUBE_VALUES_MAX values:
 * not to be parsed. */
int kube_too_many_values(const char *buf, size_t len);

/* The fields every kind shares. */

/* err, as fmt says: -EINVAL. */
int kube_bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* v's string when it holds no NUL, else NULL: every string read is taken
 * through here or kube_field. */
const char *kube_text(const json_t *v);
/* Printable ASCII, no blank: an opaque token's bytes. */
int kube_token_ok(const char *s, size_t n);
/* metadata.uid: 8-4-4-4-12 lowercase hex. */
int kube_uid_ok(const char *s, size_t n);
/* A DNS label (a namespace's, a container's name): 1 to 63 of [a-z0-9-],
 * alphanumeric at both ends. */
int kube_dns_label_ok(const char *s, size_t n);
/* A DNS subdomain (an object's name): dot-separated labels, at most 253. */
int kube_dns_name_ok(const char *s, size_t n);
/* A resourceVersion: 1 to KUBE_RV_MAX token bytes. */
int kube_rv_ok(const char *s, size_t n);
/* obj's string field key into dst (cap bytes with its NUL), when ok says
 * it is one; what names it in errors. 0, or -EINVAL. */
int kube_field(const json_t *obj, const char *key, const char *what, int (*ok)(const char *, size_t), char *dst,
	       size_t cap, char *err, size_t errlen);

#endif
