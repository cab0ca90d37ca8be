/* pp_json.h — the one JSON writer: strings escaped and checked as UTF-8
 * (invalid bytes become U+FFFD, so any parser accepts the output), NULL
 * written as "", commas placed by the writer. Output goes to a sink
 * function, so the same code serves a FILE and the viewers' buffers. */
#ifndef PP_JSON_H
#define PP_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef void (*pp_json_sink)(void *ud, const char *p, size_t n);

/* A quoted, escaped JSON string of s. '<' is escaped as well, so the text
 * can sit in an inline <script>. s may be NULL (written as ""). */
void pp_json_string(pp_json_sink put, void *ud, const char *s);
/* The same onto a stdio stream. */
void pp_json_fputs(FILE *f, const char *s);
/* Length of the valid UTF-8 sequence at s (1..4; 1 for ASCII, NUL
 * included), or 0 where the bytes are not UTF-8: overlong forms,
 * surrogates, past U+10FFFF, a sequence cut short. */
int pp_utf8_len(const unsigned char *s);

/* A structured writer: nesting and commas tracked for the caller. */
#define PP_JSON_DEPTH 32
typedef struct pp_json {
	pp_json_sink put;
	void *ud;
	int depth;
	unsigned char first[PP_JSON_DEPTH]; /* no element written yet at this level */
	char close[PP_JSON_DEPTH];          /* '}' or ']' for each open level */
	int after_key;
} pp_json;

void pp_json_init(pp_json *w, pp_json_sink put, void *ud);
void pp_json_init_file(pp_json *w, FILE *f);
void pp_json_obj(pp_json *w);            /* { */
void pp_json_arr(pp_json *w);            /* [ */
void pp_json_end(pp_json *w);            /* } or ] */
void pp_json_key(pp_json *w, const char *k);
void pp_json_str(pp_json *w, const char *s);
void pp_json_int(pp_json *w, int64_t v);
void pp_json_num(pp_json *w, double v);  /* NaN and infinities as null */
void pp_json_bool(pp_json *w, int v);
void pp_json_null(pp_json *w);
/* A key and its value in one call. */
void pp_json_kstr(pp_json *w, const char *k, const char *s);
void pp_json_kint(pp_json *w, const char *k, int64_t v);
void pp_json_knum(pp_json *w, const char *k, double v);
void pp_json_kbool(pp_json *w, const char *k, int v);

#endif
