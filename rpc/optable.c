/* SPDX-License-Identifier: Apache-2.0 */
/* optable.c - a program's table of options (optable.h): getopt_long's
 * table, its refusals in words, and completion scripts for bash and zsh.
 * Both scripts read the words typed so far as the program would: an
 * option that takes a value takes the next word (unless written
 * --name=VALUE), the first other word is the command, the next its first
 * operand. */
#include <errno.h>
#include <string.h>

#include "optable.h"

void opt_longopts(const struct opt_program *p, struct option *lo)
{
	size_t k;
	for (k = 0; k < p->nopts; k++)
		lo[k] = (struct option){p->opts[k].name, p->opts[k].value ? required_argument : no_argument, NULL,
					OPT_VAL(k)};
	memset(&lo[k], 0, sizeof lo[k]);
}

void opt_refusal(const struct opt_program *p, const char *word, int missing, int letter, char *buf, size_t len)
{
	const char *eq = strchr(word, '=');
	size_t k, n = eq ? (size_t)(eq - word) : strlen(word), o, hits = 0, hit = 0;
	int is_long = n > 2 && word[0] == '-' && word[1] == '-';
	if (is_long)
		o = (size_t)snprintf(buf, len, "%.*s: ", (int)n, word);
	else /* a letter, maybe in a cluster (-xo): that letter */
		o = (size_t)snprintf(buf, len, "-%c: ", letter > ' ' && letter < 127 ? letter : '?');
	if (o >= len)
		return;
	if (missing) {
		snprintf(buf + o, len - o, "needs a value");
		return;
	}
	for (k = 0; is_long && k < p->nopts; k++) {
		if (strncmp(p->opts[k].name, word + 2, n - 2))
			continue;
		if (p->opts[k].name[n - 2] == 0) { /* this one exactly: hits as a beginning are of others */
			hit = k;
			hits = 1;
			break;
		}
		hit = k;
		hits++;
	}
	if (hits == 1 && eq && !p->opts[hit].value) { /* it, or its beginning, with a value it takes none of */
		snprintf(buf + o, len - o, "takes no value");
		return;
	}
	if (hits < 2) {
		snprintf(buf + o, len - o, "no such %s", p->noun);
		return;
	}
	o += (size_t)snprintf(buf + o, len - o, "ambiguous (");
	for (k = 0, hits = 0; k < p->nopts && o < len; k++)
		if (!strncmp(p->opts[k].name, word + 2, n - 2))
			o += (size_t)snprintf(buf + o, len - o, "%s--%s", hits++ ? ", " : "", p->opts[k].name);
	if (o < len)
		snprintf(buf + o, len - o, ")");
}

enum kind { K_NONE, K_FILE, K_DIR, K_WORDS, K_TYPED };

static enum kind kind_of(const struct opt_def *o)
{
	if (!o->value)
		return K_NONE;
	if (!strcmp(o->value, "FILE") || !strcmp(o->value, "PATH"))
		return K_FILE;
	if (!strcmp(o->value, "DIR"))
		return K_DIR;
	return strchr(o->value, '|') ? K_WORDS : K_TYPED;
}

/* "-x|--name" of o, as a case pattern. */
static void pattern(FILE *f, const struct opt_def *o, int *first)
{
	if (o->short_name)
		fprintf(f, "%s-%c", *first ? "" : "|", o->short_name);
	fprintf(f, "%s--%s", *first && !o->short_name ? "" : "|", o->name);
	*first = 0;
}

/* The case pattern of every option of kind k (wanted: any that takes a
 * value); nothing, and 0, when there is none. */
static int patterns(FILE *f, const struct opt_program *p, int k)
{
	int first = 1;
	size_t i;
	for (i = 0; i < p->nopts; i++)
		if (k < 0 ? p->opts[i].value != NULL : kind_of(&p->opts[i]) == (enum kind)k)
			pattern(f, &p->opts[i], &first);
	return !first;
}

/* The long options of command c (c < 0: every one). */
static void option_words(FILE *f, const struct opt_program *p, int c)
{
	size_t i;
	for (i = 0; i < p->nopts; i++)
		if (c < 0 || (p->opts[i].cmds >> c & 1))
			fprintf(f, " --%s", p->opts[i].name);
}

static void words_of(FILE *f, const char *const *w)
{
	for (; *w; w++)
		fprintf(f, " %s", *w);
}

/* The words of a value of the form "a|b|c", space-separated. */
static void value_words(FILE *f, const char *v)
{
	for (; *v; v++)
		fputc(*v == '|' ? ' ' : *v, f);
}

/* sh: the case arms that complete a value (in bash, COMPREPLY from
 * compgen; in zsh, _files and compadd). */
static void value_arms(FILE *f, const struct opt_program *p, int zsh)
{
	size_t i;
	/* bash: names as file names (a directory to go into, not a word
	 * ended), one a line whatever spaces they hold */
	if (patterns(f, p, K_FILE))
		fprintf(f, ")\n\t\t%s\n\t\treturn ;;\n\t",
			zsh ? "_files" : "compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")");
	if (patterns(f, p, K_DIR))
		fprintf(f, ")\n\t\t%s\n\t\treturn ;;\n\t",
			zsh ? "_files -/" : "compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- \"$cur\")");
	for (i = 0; i < p->nopts; i++) {
		int first = 1;
		if (kind_of(&p->opts[i]) != K_WORDS)
			continue;
		pattern(f, &p->opts[i], &first);
		fprintf(f, ")\n\t\t%s", zsh ? "compadd -- " : "COMPREPLY=($(compgen -W '");
		value_words(f, p->opts[i].value);
		fprintf(f, "%s\n\t\treturn ;;\n\t", zsh ? "" : "' -- \"$cur\"))");
	}
	if (patterns(f, p, K_TYPED))
		fprintf(f, ")\n\t\treturn ;; # typed\n\t");
}

/* sh: the command and its first operand, from the words before the
 * current one (first: the first word's index). */
static void scan(FILE *f, const struct opt_program *p, const char *words, int first, int zsh)
{
	fprintf(f, "\tfor ((i = %d; i < %s; i++)); do\n\t\tw=${%s[i]}\n\t\tcase $w in\n", first,
		zsh ? "CURRENT" : "COMP_CWORD", words);
	if (!zsh) /* bash splits words at '=' and ':' too */
		fprintf(f, "\t\t=|:) ((i++)) ;; # --name=VALUE, HOST:PORT: the rest of the value\n");
	fprintf(f, "\t\t--*=*|--) ;;\n\t\t");
	if (patterns(f, p, -1))
		fprintf(f, ")\n\t\t\t%s((i++)) ;;\n", zsh ? "" : "[[ ${COMP_WORDS[i+1]} == = ]] || ");
	fprintf(f, "\t\t-*) ;;\n\t\t*) if [[ -z $cmd ]]; then cmd=$w; elif [[ -z $sub ]]; then sub=$w; fi ;;\n"
		   "\t\tesac\n\tdone\n");
}

/* sh: what comes when the current word is no value: options, commands,
 * a command's first operand. */
static void rest(FILE *f, const struct opt_program *p, int zsh)
{
	const char *open = zsh ? "compadd --" : "COMPREPLY=($(compgen -W '";
	const char *close = zsh ? "" : "' -- \"$cur\"))";
	size_t c;
	fprintf(f, "\tif [[ $cur == -* ]]; then\n");
	if (!p->ncmds) {
		fprintf(f, "\t\t%s", open);
		option_words(f, p, -1);
		fprintf(f, "%s\n\t\treturn\n\tfi\n", close);
		return;
	}
	fprintf(f, "\t\tcase $cmd in\n");
	for (c = 0; c < p->ncmds; c++) {
		fprintf(f, "\t\t%s) %s", p->cmds[c].name, open);
		option_words(f, p, (int)c);
		fprintf(f, "%s ;;\n", close);
	}
	fprintf(f, "\t\t*) %s", open); /* before the command: any */
	option_words(f, p, -1);
	fprintf(f, "%s ;;\n\t\tesac\n\t\treturn\n\tfi\n\tif [[ -z $cmd ]]; then\n\t\t%s", close, open);
	for (c = 0; c < p->ncmds; c++)
		fprintf(f, " %s", p->cmds[c].name);
	fprintf(f, "%s\n\t\treturn\n\tfi\n\t[[ -z $sub ]] || return\n\tcase $cmd in\n", close);
	for (c = 0; c < p->ncmds; c++) {
		if (!p->cmds[c].words)
			continue;
		fprintf(f, "\t%s) %s", p->cmds[c].name, open);
		words_of(f, p->cmds[c].words);
		fprintf(f, "%s ;;\n", close);
	}
	fprintf(f, "\tesac\n");
}

static void function_name(FILE *f, const char *prog)
{
	fputc('_', f);
	for (; *prog; prog++)
		fputc(*prog == '-' ? '_' : *prog, f);
}

static void bash(FILE *f, const struct opt_program *p)
{
	fprintf(f, "# bash completion for %s, written by %s from its own tables\n", p->name, p->name);
	function_name(f, p->name);
	fprintf(f, "()\n{\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd= sub= i w\n"
		   "\tCOMPREPLY=()\n"
		   "\t# --name=VALUE: bash splits it at '=' (and HOST:PORT at ':': a value to type)\n"
		   "\tif [[ $cur == = ]]; then cur=; elif [[ $prev == = ]]; then prev=${COMP_WORDS[COMP_CWORD-2]}; fi\n"
		   "\t[[ $cur == : || $prev == : ]] && return\n");
	scan(f, p, "COMP_WORDS", 1, 0);
	fprintf(f, "\tcase $prev in\n\t");
	value_arms(f, p, 0);
	fprintf(f, "esac\n");
	rest(f, p, 0);
	fprintf(f, "}\ncomplete -F ");
	function_name(f, p->name);
	fprintf(f, " %s\n", p->name);
}

static void zsh(FILE *f, const struct opt_program *p)
{
	fprintf(f, "#compdef %s\n# zsh completion for %s, written by %s from its own tables\n", p->name, p->name,
		p->name);
	function_name(f, p->name);
	fprintf(f, "() {\n\tlocal cur=${words[CURRENT]} prev=${words[CURRENT-1]} cmd= sub= i w\n");
	scan(f, p, "words", 2, 1);
	fprintf(f, "\t# --name=VALUE\n\tif [[ $cur == --*=* ]]; then\n\t\tprev=${cur%%%%=*}\n\t\tcompset -P '*='\n"
		   "\t\tcur=${cur#*=}\n\tfi\n\tcase $prev in\n\t");
	value_arms(f, p, 1);
	fprintf(f, "esac\n\t[[ ${words[CURRENT]} == --*=* ]] && return\n");
	rest(f, p, 1);
	/* as the autoloaded function (compinit), complete now; sourced,
	 * register it */
	fprintf(f, "}\nif [[ $funcstack[1] == ");
	function_name(f, p->name);
	fprintf(f, " ]]; then\n\t");
	function_name(f, p->name);
	fprintf(f, " \"$@\"\nelse\n\tcompdef ");
	function_name(f, p->name);
	fprintf(f, " %s\nfi\n", p->name);
}

int opt_completion(FILE *f, const struct opt_program *p, const char *shell)
{
	if (!strcmp(shell, "bash"))
		bash(f, p);
	else if (!strcmp(shell, "zsh"))
		zsh(f, p);
	else
		return -EINVAL;
	return 0;
}
