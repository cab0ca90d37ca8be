/* pp_json.c — JSON strings and a small structured writer (see pp_json.h). */
#include "pp_json.h"
#include "pp_assert.h"

#include <math.h>
#include <string.h>

/* Length of a valid UTF-8 sequence at s (1..4), or 0 where the bytes are
 * not UTF-8 (overlong forms, surrogates and code points past U+10FFFF
 * included): names come from other programs and may be anything. */
int pp_utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	if (c < 0x80)
		return 1;
	int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) || (c == 0xf0 && s[1] < 0x90) ||
	    (c == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

void pp_json_string(pp_json_sink put, void *ud, const char *s)
{
	put(ud, "\"", 1);
	if (!s)
		s = "";
	const char *run = s;
	while (*s) {
		unsigned char ch = (unsigned char)*s;
		const char *rep = NULL;
		char esc[8];
		int n = 1;
		if (ch == '"')
			rep = "\\\"";
		else if (ch == '\\')
			rep = "\\\\";
		else if (ch == '\n')
			rep = "\\n";
		else if (ch == '\t')
			rep = "\\t";
		else if (ch < 0x20 || ch == '<') {
			snprintf(esc, sizeof esc, "\\u%04x", ch);
			rep = esc;
		} else if (ch >= 0x80 && (n = pp_utf8_len((const unsigned char *)s)) == 0) {
			rep = "\\ufffd";
			n = 1;
		}
		if (rep) {
			put(ud, run, (size_t)(s - run));
			put(ud, rep, strlen(rep));
			s += n;
			run = s;
		} else {
			s += n;
		}
	}
	put(ud, run, (size_t)(s - run));
	put(ud, "\"", 1);
}

static void file_sink(void *ud, const char *p, size_t n)
{
	if (n)
		fwrite(p, 1, n, (FILE *)ud);
}

void pp_json_fputs(FILE *f, const char *s) { pp_json_string(file_sink, f, s); }

void pp_json_init(pp_json *w, pp_json_sink put, void *ud)
{
	memset(w, 0, sizeof *w);
	w->put = put;
	w->ud = ud;
	w->first[0] = 1;
}

void pp_json_init_file(pp_json *w, FILE *f) { pp_json_init(w, file_sink, f); }

static void raw(pp_json *w, const char *s) { w->put(w->ud, s, strlen(s)); }

/* Before any value: the comma that separates it from the previous one. */
static void sep(pp_json *w)
{
	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (!w->first[w->depth])
		raw(w, ",");
	w->first[w->depth] = 0;
}

/* Deeper than PP_JSON_DEPTH the commas may be wrong, but every bracket
 * still closes: phaseprof's documents are a few levels deep. */
static void open_level(pp_json *w, const char *open, char close)
{
	sep(w);
	raw(w, open);
	if (w->depth + 1 < PP_JSON_DEPTH)
		w->depth++;
	w->first[w->depth] = 1;
	w->close[w->depth] = close;
}

void pp_json_obj(pp_json *w) { open_level(w, "{", '}'); }
void pp_json_arr(pp_json *w) { open_level(w, "[", ']'); }

void pp_json_end(pp_json *w)
{
	/* a key with no value before it would be invalid JSON */
	PP_ASSERT(!w->after_key);
	if (w->depth == 0)
		return;
	w->put(w->ud, &w->close[w->depth], 1);
	w->depth--;
}

void pp_json_key(pp_json *w, const char *k)
{
	/* keys only inside an object, one per value */
	PP_ASSERT(!w->after_key && w->close[w->depth] == '}');
	sep(w);
	pp_json_string(w->put, w->ud, k);
	raw(w, ":");
	w->after_key = 1;
}

void pp_json_str(pp_json *w, const char *s)
{
	sep(w);
	pp_json_string(w->put, w->ud, s);
}

void pp_json_int(pp_json *w, int64_t v)
{
	char b[24];
	snprintf(b, sizeof b, "%lld", (long long)v);
	sep(w);
	raw(w, b);
}

void pp_json_num(pp_json *w, double v)
{
	char b[32];
	if (isfinite(v))
		snprintf(b, sizeof b, "%.6g", v);
	else
		snprintf(b, sizeof b, "null");
	sep(w);
	raw(w, b);
}

void pp_json_bool(pp_json *w, int v)
{
	sep(w);
	raw(w, v ? "true" : "false");
}

void pp_json_null(pp_json *w)
{
	sep(w);
	raw(w, "null");
}

void pp_json_kstr(pp_json *w, const char *k, const char *s)
{
	pp_json_key(w, k);
	pp_json_str(w, s);
}

void pp_json_kint(pp_json *w, const char *k, int64_t v)
{
	pp_json_key(w, k);
	pp_json_int(w, v);
}

void pp_json_knum(pp_json *w, const char *k, double v)
{
	pp_json_key(w, k);
	pp_json_num(w, v);
}

void pp_json_kbool(pp_json *w, const char *k, int v)
{
	pp_json_key(w, k);
	pp_json_bool(w, v);
}
