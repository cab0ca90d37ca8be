/* store_intern.c — strings to ids in the `strings` table, with an in-memory
 * cache for writers (every name an ingest stores goes through it). */
#include "store.h"
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

static uint32_t hash_bytes(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h ? h : 1;
}

void pp_store_intern_cache_free(pp_store *st)
{
	for (uint32_t i = 0; i < st->cap; i++)
		free(st->slots[i].text);
	free(st->slots);
	st->slots = NULL;
	st->cap = st->n = 0;
	sqlite3_finalize(st->ins_string);
	sqlite3_finalize(st->sel_string);
	st->ins_string = st->sel_string = NULL;
}

static int intern_grow(pp_store *st)
{
	uint32_t cap = st->cap ? st->cap * 2 : 4096;
	intern_slot *t = calloc(cap, sizeof *t);
	if (!t)
		return -1;
	for (uint32_t i = 0; i < st->cap; i++) {
		if (!st->slots[i].text)
			continue;
		uint32_t j = st->slots[i].hash & (cap - 1);
		while (t[j].text)
			j = (j + 1) & (cap - 1);
		t[j] = st->slots[i];
	}
	free(st->slots);
	st->slots = t;
	st->cap = cap;
	return 0;
}

/* The store id of a string (added if new), or -1 on a database error. */
int64_t pp_store_intern_n(pp_store *st, const char *s, size_t len)
{
	if (len > INT32_MAX)
		return -1;
	if (st->n * 2 >= st->cap && intern_grow(st) != 0)
		return -1;
	uint32_t h = hash_bytes(s, len);
	uint32_t j = h & (st->cap - 1);
	while (st->slots[j].text) {
		if (st->slots[j].hash == h && strlen(st->slots[j].text) == len &&
		    memcmp(st->slots[j].text, s, len) == 0)
			return st->slots[j].id;
		j = (j + 1) & (st->cap - 1);
	}
	if (!st->ins_string &&
	    (sqlite3_prepare_v2(st->db, "INSERT OR IGNORE INTO strings(value) VALUES(?)", -1,
				&st->ins_string, NULL) != SQLITE_OK ||
	     sqlite3_prepare_v2(st->db, "SELECT id FROM strings WHERE value=?", -1, &st->sel_string,
				NULL) != SQLITE_OK)) {
		pp_store_intern_cache_free(st);
		return -1;
	}
	sqlite3_bind_text(st->ins_string, 1, s, (int)len, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st->ins_string);
	sqlite3_reset(st->ins_string);
	if (rc != SQLITE_DONE)
		return -1;
	int64_t id;
	if (sqlite3_changes(st->db) == 1) {
		id = sqlite3_last_insert_rowid(st->db);
	} else {
		sqlite3_bind_text(st->sel_string, 1, s, (int)len, SQLITE_TRANSIENT);
		rc = sqlite3_step(st->sel_string);
		id = rc == SQLITE_ROW ? sqlite3_column_int64(st->sel_string, 0) : -1;
		sqlite3_reset(st->sel_string);
		if (id < 0)
			return -1;
	}
	/* a string with a NUL inside is stored but not cached (strlen compare) */
	char *copy = memchr(s, 0, len) ? NULL : malloc(len + 1);
	if (copy) {
		memcpy(copy, s, len);
		copy[len] = 0;
		st->slots[j].text = copy;
		st->slots[j].hash = h;
		st->slots[j].id = id;
		st->n++;
	}
	return id;
}

int64_t pp_store_intern(pp_store *st, const char *s)
{
	return pp_store_intern_n(st, s ? s : "", s ? strlen(s) : 0);
}
