/* store_intern.c — strings to ids in the `strings` table, with an in-memory
 * cache for writers (every name an ingest stores goes through it). */
#include "store.h"
#include "store_internal.h"

#include "pp_grow.h"
#include "pp_assert.h"

#include <stdlib.h>
#include <string.h>

void pp_store_intern_cache_free(pp_store *st)
{
	for (uint32_t i = 0; i < st->n_interned; i++)
		free(st->interned[i].text);
	free(st->interned);
	pp_hash_free(&st->intern_index);
	pp_hash_free(&st->intern_by_id);
	st->interned = NULL;
	st->n_interned = st->cap_interned = 0;
	sqlite3_finalize(st->ins_string);
	sqlite3_finalize(st->sel_string);
	st->ins_string = st->sel_string = NULL;
}

/* The id of a stored string, -1 if absent, -2 on a database error. */
static int64_t select_string(pp_store *st, const char *s, size_t len)
{
	/* reset after every use: binding a statement mid-step fails (MISUSE) */
	PP_ASSERT(!sqlite3_stmt_busy(st->sel_string));
	sqlite3_bind_text(st->sel_string, 1, s, (int)len, SQLITE_STATIC);
	int rc = sqlite3_step(st->sel_string);
	int64_t id = rc == SQLITE_ROW ? sqlite3_column_int64(st->sel_string, 0) : rc == SQLITE_DONE ? -1 : -2;
	sqlite3_reset(st->sel_string);
	return id;
}

/* The store id of a string (added if new), or -1 on a database error. */
int64_t pp_store_intern_n(pp_store *st, const char *s, size_t len)
{
	if (len > INT32_MAX)
		return -1;
	uint32_t h = pp_hash_mem(s, len);
	for (uint32_t it = 0, i; pp_hash_next(&st->intern_index, h, &it, &i);) {
		PP_ASSERT(i < st->n_interned);
		const intern_ent *e = &st->interned[i];
		if (e->len == len && memcmp(e->text, s, len) == 0)
			return e->id;
	}
	if (!st->ins_string &&
	    (sqlite3_prepare_v2(st->db, "INSERT OR IGNORE INTO strings(value) VALUES(?)", -1,
				&st->ins_string, NULL) != SQLITE_OK ||
	     sqlite3_prepare_v2(st->db, "SELECT id FROM strings WHERE value=?", -1, &st->sel_string,
				NULL) != SQLITE_OK)) {
		pp_store_intern_cache_free(st);
		return -1;
	}
	/* A database this store made holds few strings it has not cached: try
	 * the insert first. One that existed before mostly holds them already
	 * (the same program recorded again): look first, insert if missing.
	 * Either way within the ingest's write transaction, so no writer slips
	 * in between. */
	int64_t id = st->fresh ? -1 : select_string(st, s, len);
	if (id == -2)
		return -1;
	if (id < 0) {
		PP_ASSERT(!sqlite3_stmt_busy(st->ins_string));
		sqlite3_bind_text(st->ins_string, 1, s, (int)len, SQLITE_STATIC);
		int rc = sqlite3_step(st->ins_string);
		sqlite3_reset(st->ins_string);
		if (rc != SQLITE_DONE)
			return -1;
		id = sqlite3_changes(st->db) == 1 ? sqlite3_last_insert_rowid(st->db) : select_string(st, s, len);
		if (id < 0)
			return -1;
	}
	/* a string with a NUL inside is stored but not cached; a cache entry
	 * that cannot be added costs only a later query */
	if (memchr(s, 0, len) || PP_GROW(st->interned, st->n_interned + 1, st->cap_interned) != 0)
		return id;
	/* room in both indexes first: an add that failed after the other
	 * succeeded left an index naming an entry never filled in (read as a
	 * string by the next lookup of that hash) */
	char *copy = malloc(len + 1);
	if (copy && pp_hash_reserve(&st->intern_index, st->n_interned + 1) == 0 &&
	    pp_hash_reserve(&st->intern_by_id, st->n_interned + 1) == 0 &&
	    pp_hash_add(&st->intern_index, h, st->n_interned) == 0 &&
	    pp_hash_add(&st->intern_by_id, pp_hash_u64((uint64_t)id), st->n_interned) == 0) {
		memcpy(copy, s, len);
		copy[len] = 0;
		st->interned[st->n_interned++] = (intern_ent){copy, len, id};
	} else {
		free(copy);
	}
	return id;
}

int64_t pp_store_intern(pp_store *st, const char *s)
{
	return pp_store_intern_n(st, s ? s : "", s ? strlen(s) : 0);
}

const char *pp_store_intern_text(pp_store *st, int64_t id)
{
	for (uint32_t it = 0, i; pp_hash_next(&st->intern_by_id, pp_hash_u64((uint64_t)id), &it, &i);) {
		PP_ASSERT(i < st->n_interned);
		if (st->interned[i].id == id)
			return st->interned[i].text;
	}
	return NULL;
}
